//! Host tests of the cost models: the shipped presets, the header, a raw MLC text, the fit to
//! a machine and the SLIT-scaled fallback, the LLC's scaling and the plugin's directives.

use super::apply::{fits, scaled_llc, FALLBACK};
use super::presets::{self, for_machine, resolve, NAMES};
use super::*;

fn shape(dist: Vec<Vec<u8>>, vcpu_nodes: Vec<u32>, mem: Vec<u32>) -> Shape {
    Shape {
        distances: dist,
        vcpu_nodes,
        mem_nodes: mem,
    }
}

fn four_node() -> Shape {
    let d = (0..4)
        .map(|i| {
            (0..4)
                .map(|j| {
                    if i == j {
                        10
                    } else if i / 2 == j / 2 {
                        16
                    } else {
                        32
                    }
                })
                .collect()
        })
        .collect();
    shape(d, vec![0, 0, 1, 1, 2, 2, 3, 3], vec![0, 1, 2, 3])
}

#[test]
fn every_preset_parses_with_its_figures() {
    for name in NAMES {
        let m = presets::find(name).unwrap();
        assert_eq!(m.name, name);
        assert!(m.ghz > 0.0 && m.llc_cores > 0);
        assert!(
            m.sources.iter().any(|(k, _)| k == "source_matrix"),
            "{name}"
        );
    }
    let c = presets::find("cascadelake-2s").unwrap();
    assert!(c.borrowed.is_empty());
    assert_eq!(c.latency().get(0, 1), Some(144.1));
    assert_eq!(c.mlc.c2c_reader.as_ref().unwrap().get(1, 0), Some(176.8));
    let g = presets::find("gnr-6980p-snc3").unwrap();
    assert_eq!(g.latency().rows.len(), 6);
    assert_eq!(g.latency().get(2, 3), Some(507.8));
    assert_eq!(g.mlc.hitm_local, Some(80.9));
    // No c2c with the EPYC run: the local HITM is the default preset's, and it says so.
    let x = presets::find("genoa-9224-cxl").unwrap();
    assert_eq!(x.latency().cols, vec![0, 1, 2, 3, 4]);
    assert_eq!(x.latency().get(2, 4), Some(363.8));
    assert!(x.borrowed[0].contains("local HITM") && x.borrowed[0].contains("cascadelake-2s"));
}

#[test]
fn raw_mlc_takes_what_it_lacks_from_the_default_and_says_so() {
    let text = "Intel(R) Memory Latency Checker - v3.11b\n\
Command line parameters: --latency_matrix\n\
Measuring idle latencies for random access (in ns)...\n\
\t\tNuma node\n\
Numa node\t     0\t     1\t\n\
       0\t  96.6\t 149.2\t\n\
       1\t 149.5\t  96.0\t\n";
    let d = presets::default_model();
    let m = CostModel::parse(text, "mine", Some(&d)).unwrap();
    assert_eq!(m.name, "mine");
    assert_eq!(m.l2, d.l2);
    assert_eq!(m.ghz, d.ghz);
    assert_eq!(m.mlc.hitm_local, d.mlc.hitm_local);
    let note = &m.borrowed[0];
    assert!(note.contains("ghz") && note.contains("local HITM") && note.contains("cascadelake-2s"));
    // A preset must be complete.
    assert!(CostModel::parse(text, "mine", None).is_err());
}

#[test]
fn header_errors_name_their_line() {
    let body = presets::FILES[0].1;
    let bad = |from: &str, to: &str| {
        CostModel::parse(&body.replacen(from, to, 1), "x", None).unwrap_err()
    };
    let e = bad("ghz: 2.5", "ghz: fast");
    assert!(e.starts_with("line 4:") && e.contains("ghz"), "{e}");
    let e = bad("l2: 1048576 16 14", "l2: 1000000 16 14");
    assert!(e.starts_with("line 6:") && e.contains("multiple"), "{e}");
    let e = bad("llc_policy: non_inclusive", "llc_policy: exclusive");
    assert!(e.starts_with("line 8:"), "{e}");
    let e = bad("llc_cores: 26", "llc_core: 26");
    assert!(e.starts_with("line 9:") && e.contains("unknown key"), "{e}");
    let e = bad("llc_domains: 0 1", "llc_domains: 0 1 2");
    assert!(e.contains("llc_domains"), "{e}");
    // An entry in MLC's part: named by its line in the whole file.
    let n = body
        .lines()
        .position(|l| l.starts_with("       1   144.7"))
        .unwrap()
        + 1;
    let e = bad("       1   144.7    78.5", "       1   144.7");
    assert!(
        e.starts_with(&format!("line {n}:")) && e.contains("missing"),
        "{e}"
    );
    let e = bad("       1   144.7    78.5", "       1   144.7   -78.5");
    assert!(
        e.starts_with(&format!("line {n}:")) && e.contains("negative"),
        "{e}"
    );
    let late = format!("{body}ghz: 3.0\n");
    let e = CostModel::parse(&late, "x", None).unwrap_err();
    let n = body.lines().count() + 1;
    assert!(
        e.starts_with(&format!("line {n}:")) && e.contains("header comes first"),
        "{e}"
    );
    let e = CostModel::parse("name: x\nghz: 2\n", "x", None).unwrap_err();
    assert!(e.contains("no idle latency matrix"), "{e}");
}

#[test]
fn a_matrix_fits_only_the_machine_of_its_size() {
    let c = presets::find("cascadelake-2s").unwrap();
    let two = shape(vec![vec![10, 21], vec![21, 10]], vec![0, 1], vec![0, 1]);
    assert!(fits(&c, &two).is_ok());
    let e = fits(&c, &four_node()).unwrap_err();
    assert!(e.contains("2x2") && e.contains("[0, 1, 2, 3]"), "{e}");
    // Named by the user: refused; the default: SLIT-scaled, and labelled so.
    assert!(Applied::new(c.clone(), four_node(), true).is_err());
    let a = Applied::new(c, four_node(), false).unwrap();
    assert!(a.dram_fallback && a.label().contains(FALLBACK));
    let local = (78.6 + 78.5) / 2.0;
    assert!((a.dram_cycles(0, 3) - local * 3.2 * 2.5).abs() < 1e-9);
    assert!((a.hitm_cycles(0, 1, 1) - 50.1 * 1.6 * 2.5).abs() < 1e-9);
    // The CXL model fits a machine whose node 4 has memory and no CPU.
    let x = presets::find("genoa-9224-cxl").unwrap();
    let cxl = shape(vec![], vec![0, 1, 2, 3], vec![0, 1, 2, 3, 4]);
    assert!(fits(&x, &cxl).is_ok());
    assert!(fits(&x, &four_node()).is_err());
}

#[test]
fn the_default_is_the_preset_that_fits() {
    let a = for_machine(None, &four_node()).unwrap();
    assert_eq!(a.model.name, "genoa-9224-nps2");
    assert!(!a.dram_fallback);
    // No c2c table: remote HITM is SLIT-scaled, and the label says so.
    assert!(
        a.hitm_fallback && a.label().contains(FALLBACK),
        "{}",
        a.label()
    );
    assert!((a.dram_cycles(1, 2) - 199.9 * 2.5).abs() < 1e-9);
    let eight = shape(vec![vec![10; 8]; 8], (0..8).collect(), (0..8).collect());
    let a = for_machine(None, &eight).unwrap();
    assert_eq!(a.model.name, presets::DEFAULT);
    assert!(a.dram_fallback);
    // Named, it must fit.
    let g = presets::find("gnr-6980p-snc3").unwrap();
    assert!(for_machine(Some(&g), &four_node()).is_err());
}

#[test]
fn the_llc_is_scaled_to_the_vcpus_of_a_domain() {
    let llc = Level {
        bytes: 37486592,
        ways: 11,
        cycles: 50.0,
    };
    // 26 cores share 35.75 MiB: 1.375 MiB each; 2 vCPUs get 2.75 MiB, below 4 x L2 (4 MiB).
    let l = scaled_llc(llc, 26, 2, 1 << 20);
    assert!(
        (4 << 20..(4 << 20) + 64 * 11).contains(&l) && l.is_multiple_of(64 * 11),
        "{l}"
    );
    // 8 vCPUs: 8 x 1.375 MiB.
    let l = scaled_llc(llc, 26, 8, 1 << 20);
    assert_eq!(l, 37486592 / 26 * 8);
    // Never above the real LLC.
    assert_eq!(scaled_llc(llc, 26, 100, 1 << 20), 37486592);
}

#[test]
fn cache_directives_follow_the_model_and_its_domains() {
    let g = presets::find("gnr-6980p-snc3").unwrap();
    let six = shape(vec![], vec![0, 1, 2, 3, 4, 5], (0..6).collect());
    let a = Applied::new(g, six, true).unwrap();
    let d = a.cache_directives();
    assert!(d.contains("\nl1d 49152 12\n"), "{d}");
    assert!(d.contains("\nl2 2097152 16\n"), "{d}");
    assert!(
        d.contains(&format!("\nllc {} 16 non_inclusive\n", 8 << 20)),
        "{d}"
    );
    for n in 0..6 {
        assert!(d.contains(&format!("llc_of {n} {n}\n")), "{d}");
    }
    // A model whose header puts two nodes in one LLC domain.
    let text = presets::FILES[0]
        .1
        .replace("llc_domains: 0 1", "llc_domains: 7 7");
    let m = CostModel::parse(&text, "x", None).unwrap();
    let two = shape(vec![], vec![0, 1], vec![0, 1]);
    let d = Applied::new(m, two, true).unwrap().cache_directives();
    assert!(d.contains("llc_of 0 0\nllc_of 1 0\n"), "{d}");
}

#[test]
fn resolve_refuses_what_is_not_a_regular_file() {
    let e = resolve("/dev/null").unwrap_err();
    assert!(e.contains("not a regular file"), "{e}");
    let e = resolve("/nonexistent/model.mlc").unwrap_err();
    assert!(e.contains("not a preset"), "{e}");
    assert!(resolve("gnr-6980p-snc3").is_ok());
    let dir = std::env::temp_dir().join(format!("numalab-costs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("mine.txt");
    std::fs::write(
        &f,
        "Measuring idle latencies (in ns)...\n    Numa node\nNuma node      0\n       0    80.0\n",
    )
    .unwrap();
    let m = resolve(f.to_str().unwrap()).unwrap();
    assert_eq!(m.name, "mine");
    std::fs::write(
        &f,
        "Measuring idle latencies (in ns)...\n    Numa node\nNuma node      0\n       0    x\n",
    )
    .unwrap();
    let e = resolve(f.to_str().unwrap()).unwrap_err();
    assert!(e.contains("line 4:") && e.contains("not a number"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
