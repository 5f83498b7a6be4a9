//! Host tests of host_numa.rs over fake sysfs trees: a 2-socket host of 8 CPUs per node, an
//! 8-node host of 4 CPUs per node, and a kernel without NUMA.

use super::*;
use std::path::PathBuf;

/// A fake sysfs root under the test's temporary folder: `devices/system/cpu/online` and, when
/// `nodes` is Some, `devices/system/node/online` and each `nodeN/cpulist`.
fn fake_sys(name: &str, online: &str, nodes: Option<&[&str]>) -> PathBuf {
    // Tests run side by side: each tree gets its own folder.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!(
        "numalab-host-numa-{name}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let cpu = root.join("devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(cpu.join("online"), format!("{online}\n")).unwrap();
    if let Some(nodes) = nodes {
        let node = root.join("devices/system/node");
        for (i, list) in nodes.iter().enumerate() {
            let dir = node.join(format!("node{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("cpulist"), format!("{list}\n")).unwrap();
        }
        let ids = format!("0-{}", nodes.len() - 1);
        std::fs::write(node.join("online"), format!("{ids}\n")).unwrap();
    }
    root
}

fn two_socket() -> HostTopology {
    read_host(&fake_sys("2s", "0-15", Some(&["0-7", "8-15"]))).unwrap()
}

fn eight_node() -> HostTopology {
    let lists: Vec<String> = (0..8).map(|n| format!("{}-{}", n * 4, n * 4 + 3)).collect();
    let lists: Vec<&str> = lists.iter().map(String::as_str).collect();
    read_host(&fake_sys("8n", "0-31", Some(&lists))).unwrap()
}

fn preset(name: &str, cpus: u32, mem_mib: u64) -> QemuMachine {
    crate::qemu::presets::find(name)
        .unwrap()
        .machine(cpus, mem_mib)
}

#[test]
fn lists_parse_and_print_as_linux_writes_them() {
    assert_eq!(
        parse_list("0-3,8,10-11\n").unwrap(),
        [0, 1, 2, 3, 8, 10, 11]
    );
    assert_eq!(parse_list("").unwrap(), Vec::<u32>::new());
    assert!(parse_list("0-x").is_err());
    assert!(parse_list("7-3").is_err());
    assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
}

#[test]
fn the_sysfs_trees_read_as_their_nodes() {
    let h = two_socket();
    assert_eq!(h.cpus_online.len(), 16);
    assert_eq!(h.nodes.len(), 2);
    assert_eq!(h.nodes[1].cpus, (8..16).collect::<Vec<u32>>());
    assert_eq!(eight_node().nodes[7].cpus, [28, 29, 30, 31]);
    // A kernel without NUMA: one node with every online CPU.
    let flat = read_host(&fake_sys("flat", "0-3", None)).unwrap();
    assert_eq!(
        flat.nodes,
        [HostNode {
            id: 0,
            cpus: vec![0, 1, 2, 3]
        }]
    );
    let e = read_host(Path::new("/nonexistent-sysfs")).unwrap_err();
    assert!(
        e.contains("cannot read /nonexistent-sysfs/devices/system/cpu/online"),
        "{e}"
    );
}

#[test]
fn two_socket_host_node_0_vcpus_on_cpus_0_7_memory_bound_to_node_0() {
    let host = two_socket();
    let m = preset("2node", 16, 2048);
    let p = plan(&m, &host, &[], false).unwrap();
    assert_eq!(p.map, [(0, 0), (1, 1)]);
    let node0: Vec<&VcpuPin> = p.vcpus.iter().filter(|v| v.guest_node == 0).collect();
    assert_eq!(node0.len(), 8);
    for v in node0 {
        assert_eq!(v.host_node, 0);
        assert_eq!(v.host_cpus, (0..8).collect::<Vec<u32>>(), "vCPU {}", v.vcpu);
    }
    assert!(p
        .vcpus
        .iter()
        .filter(|v| v.guest_node == 1)
        .all(|v| v.host_cpus == (8..16).collect::<Vec<u32>>()));
    let placed = placed_machine(&m, &p, false, None);
    let args = placed.args(None).join(" ");
    assert!(
        args.contains("memory-backend-ram,size=1024M,id=m0,host-nodes=0,policy=bind"),
        "{args}"
    );
    assert!(args.contains("id=m1,host-nodes=1,policy=bind"), "{args}");
    assert_eq!(
        p.describe()[0],
        "guest node 0 -> host node 0: vCPUs 0-7 on host CPUs 0-7, memory m0 bound"
    );
}

#[test]
fn the_map_defaults_to_i_mod_host_nodes_and_host_map_overrides_it() {
    let four = preset("4node", 4, 2048);
    let map = node_map(&four, &two_socket(), &[]).unwrap();
    assert_eq!(map, [(0, 0), (1, 1), (2, 0), (3, 1)]);
    let map = node_map(&four, &eight_node(), &[]).unwrap();
    assert_eq!(map, [(0, 0), (1, 1), (2, 2), (3, 3)]);
    let swapped = parse_host_map("0=1,1=0").unwrap();
    let two = preset("2node", 2, 1024);
    assert_eq!(
        node_map(&two, &two_socket(), &swapped).unwrap(),
        [(0, 1), (1, 0)]
    );
    let p = plan(&two, &two_socket(), &swapped, false).unwrap();
    assert_eq!(p.vcpus[0].host_cpus, (8..16).collect::<Vec<u32>>());
    let e = node_map(&two, &two_socket(), &[(0, 5)]).unwrap_err();
    assert_eq!(e, "--host-map 0=5: the host has no node 5 (its nodes: 0-1)");
    let e = node_map(&two, &two_socket(), &[(3, 0)]).unwrap_err();
    assert!(e.contains("no guest node 3"), "{e}");
    assert!(parse_host_map("0=1,0=0")
        .unwrap_err()
        .contains("mapped twice"));
    assert!(parse_host_map("0:1")
        .unwrap_err()
        .contains("not GUEST=HOST"));
}

#[test]
fn eight_node_guest_on_eight_node_host_is_node_for_node() {
    let m = preset("8node", 32, 4096);
    let p = plan(&m, &eight_node(), &[], false).unwrap();
    assert!(p.map.iter().all(|&(g, h)| g == h));
    for v in &p.vcpus {
        let lo = v.host_node * 4;
        assert_eq!(v.host_cpus, (lo..lo + 4).collect::<Vec<u32>>());
    }
}

#[test]
fn more_vcpus_than_host_cpus_is_refused_unless_asked() {
    let m = preset("2node", 32, 2048);
    let e = plan(&m, &two_socket(), &[], false).unwrap_err();
    assert!(
        e.starts_with("32 vCPUs but the host has 16 online CPUs"),
        "{e}"
    );
    assert!(plan(&m, &two_socket(), &[], true).is_ok());
    // Fits the host, not the node both guest nodes land on.
    let e = plan(&preset("2node", 16, 2048), &two_socket(), &[(1, 0)], false).unwrap_err();
    assert!(
        e.starts_with("host node 0 would run 16 vCPUs on its 8 CPUs"),
        "{e}"
    );
}

#[test]
fn hugepages_and_prealloc_are_knobs_of_the_backends() {
    let m = preset("2node", 2, 1024);
    let p = plan(&m, &two_socket(), &[], false).unwrap();
    let placed = placed_machine(&m, &p, true, Some(Path::new("/dev/hugepages")));
    let args = placed.args(None).join(" ");
    assert!(
        args.contains(
            "memory-backend-file,size=512M,id=m0,mem-path=/dev/hugepages,host-nodes=0,\
             policy=bind,prealloc=on"
        ),
        "{args}"
    );
}
