//! perf c2c's "Shared Data Cache Line Table" for one region's hottest lines (Linux's
//! `perf c2c report --stdio` columns: the line, its node, HITM total and its share, local and
//! remote HITM, records, loads, stores; plus atomics and invalidations, which the model counts
//! and perf does not), each line named by the kernel's label for it or its ELF symbol.

use super::elf;
use super::labels::Region;
use super::output::Line;

/// The name of the line whose first seen virtual address is `vaddr`: the kernel's label, else
/// the ELF symbol (`SYMBOL+0xOFF`), else `[heap]` in the direct map or `-`.
pub fn symbol(region: &Region, syms: &[(u64, u64, String)], vaddr: u64) -> String {
    if let Some(label) = region.name_of(vaddr) {
        return label.to_string();
    }
    if let Some((name, off)) = elf::lookup(syms, vaddr) {
        return if off == 0 {
            name.to_string()
        } else {
            format!("{name}+{off:#x}")
        };
    }
    "[dynamic]".to_string()
}

/// The table of `lines` of `region`, each with its rank among the region's hottest (the
/// Index column); `total_hitm`: all HITM of the region (the share's denominator).
pub fn table(
    region: &Region,
    lines: &[(usize, &Line)],
    total_hitm: u64,
    syms: &[(u64, u64, String)],
) -> String {
    let mut s = String::new();
    s.push_str("=================================================\n");
    s.push_str("           Shared Data Cache Line Table          \n");
    s.push_str(&format!(
        "  {} {} cpus {} (region {:#x})\n",
        region.bench, region.case, region.cpus, region.key
    ));
    s.push_str("=================================================\n");
    s.push_str("#\n");
    s.push_str("#        ----------- Cacheline ----------      Tot  ------- Load Hitm -------    Total    Total    Total    Total    Total\n");
    s.push_str("# Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm  records    Loads   Stores  Atomics    Inval  Symbol\n");
    s.push_str("# .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ......\n");
    for &(i, l) in lines {
        let share = if total_hitm == 0 {
            0.0
        } else {
            100.0 * l.hitm() as f64 / total_hitm as f64
        };
        s.push_str(&format!(
            "  {:>5}  {:>#18x}  {:>4}  {:>6}  {:>6.2}%  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {}\n",
            i,
            l.vaddr & !63,
            l.node,
            1,
            share,
            l.hitm(),
            l.hitm_local,
            l.hitm_remote,
            l.records(),
            l.loads,
            l.stores,
            l.atomics,
            l.inval,
            symbol(region, syms, l.vaddr)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_the_counts_and_the_kernels_name() {
        let region = Region {
            key: 0x20,
            bench: "slub_list_lock".into(),
            case: "linux_default".into(),
            cpus: 8,
            ops: None,
            names: vec![(0x1000, 64, "slub_list_lock node 1 list_lock".into())],
        };
        let line = Line {
            key: 0x20,
            paddr: 0x5000,
            vaddr: 0x1008,
            node: 1,
            loads: 10,
            stores: 4,
            atomics: 6,
            hitm_local: 1,
            hitm_remote: 3,
            inval: 2,
        };
        let t = table(&region, &[(0, &line)], 8, &[]);
        let row = t.lines().find(|l| l.contains("node 1 list_lock")).unwrap();
        let w: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &w[..12],
            ["0", "0x1000", "1", "1", "50.00%", "4", "1", "3", "20", "10", "4", "6"]
        );
        assert!(t.contains("Shared Data Cache Line Table"));
        assert_eq!(
            symbol(&region, &[(0x9000, 8, "STATIC".into())], 0x9004),
            "STATIC+0x4"
        );
        assert_eq!(symbol(&region, &[], 0x7777), "[dynamic]");
    }
}
