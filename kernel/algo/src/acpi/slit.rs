//! SLIT (System Locality Information Table): an N x N matrix of relative distances between
//! proximity domains (localities), 10 meaning local. Row i is "from locality i".
//!
//! `distances_for` decides, with Linux's `slit_valid()` rule, that a SLIT with a self-distance
//! other than 10 or a remote distance of 10 or less anywhere in the matrix (phantom localities,
//! which are no node's domain, included) is not used, and that one too small for the nodes is
//! not used either.

use super::sdt;
use super::warn::capped_join_by;
use crate::topology::LOCAL_DISTANCE;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Header plus the 8-byte locality count.
pub const SLIT_FIXED_BYTES: usize = 44;
/// The distance ACPI reserves for "unreachable".
pub const UNREACHABLE: u8 = 255;

/// A parsed SLIT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slit {
    pub localities: usize,
    /// localities x localities, row = from.
    pub matrix: Vec<u8>,
    pub dump: Vec<String>,
    pub warnings: Vec<String>,
}

impl Slit {
    /// Distance from locality `from` to `to`, if both exist.
    pub fn get(&self, from: usize, to: usize) -> Option<u8> {
        if from >= self.localities || to >= self.localities {
            return None;
        }
        self.matrix.get(from * self.localities + to).copied()
    }

    /// The matrix for the nodes whose proximity domains are `pxms` (node i = pxms[i]).
    /// `Err` is the warning that explains why the SLIT is not used (default distances then).
    /// `Ok` carries the matrix and warnings for legal but notable values (255, asymmetry).
    pub fn distances_for(&self, pxms: &[u32]) -> Result<(Vec<Vec<u8>>, Vec<String>), String> {
        // Linux checks the table first (acpi_parse_slit), then maps it onto the nodes.
        self.linux_valid(pxms)?;
        // Linux's acpi_numa_slit_init sets the distances of localities below the count; the
        // others keep numa_alloc_distance's defaults, 10 to self and 20 to others.
        let n = pxms.len();
        let mut m = alloc::vec![alloc::vec![0u8; n]; n];
        for (i, &pi) in pxms.iter().enumerate() {
            for (j, &pj) in pxms.iter().enumerate() {
                m[i][j] = self.get(pi as usize, pj as usize).unwrap_or(if i == j {
                    LOCAL_DISTANCE
                } else {
                    crate::topology::REMOTE_DISTANCE
                });
            }
        }
        let mut warnings = notable(pxms, &m);
        let beyond: Vec<u32> = pxms
            .iter()
            .copied()
            .filter(|&p| p as usize >= self.localities)
            .collect();
        if !beyond.is_empty() {
            warnings.push(format!(
                "SLIT: {} localities, fewer than the nodes' proximity domains: no row for PXM {}; \
                 their distances are 10 to self and 20 to others, as Linux's \
                 acpi_numa_slit_init() leaves them",
                self.localities,
                super::warn::capped_join(&beyond, " ")
            ));
        }
        Ok((m, warnings))
    }

    /// Linux's `slit_valid()` (drivers/acpi/numa/srat.c): every locality, phantom ones (no
    /// node's domain) included, row by row: 10 (LOCAL_DISTANCE) to itself and more than 10 to
    /// any other. Linux ignores a SLIT that fails ("ACPI: SLIT table looks invalid. Not used.")
    /// and uses 10/20; so does numalab. `Err` is the warning naming the first bad entry.
    fn linux_valid(&self, pxms: &[u32]) -> Result<(), String> {
        let n = self.localities;
        let Some(k) = (0..n * n).find(|&k| {
            let d = self.matrix.get(k).copied().unwrap_or(0);
            if k / n == k % n {
                d != LOCAL_DISTANCE
            } else {
                d <= LOCAL_DISTANCE
            }
        }) else {
            return Ok(());
        };
        let (i, j) = (k / n, k % n);
        let d = self.matrix.get(k).copied().unwrap_or(0);
        let mut at = format!("SLIT entry [{i}][{j}]");
        let node = |l: usize| pxms.iter().any(|&p| p as usize == l);
        if let Some(l) = [i, j].into_iter().find(|&l| !node(l)) {
            let _ = write!(at, " (locality {l} is no node's domain)");
        }
        let why = if i == j {
            format!("self-distance {d}, must be 10")
        } else if d < LOCAL_DISTANCE {
            format!("remote distance {d} is below 10")
        } else {
            String::from("remote distance 10, must be above 10 (Linux's slit_valid() rule)")
        };
        Err(format!(
            "{at}: {why}: SLIT not used, default distances 10/20"
        ))
    }
}

/// The warnings for legal but notable distances of the node matrix `m` (node i = pxms[i]):
/// unreachable (255) pairs and asymmetric pairs. Each list shows its first pairs and counts
/// the rest (a 1023-node SLIT has 522753 pairs: listing them all made a 15 MB warning).
fn notable(pxms: &[u32], m: &[Vec<u8>]) -> Vec<String> {
    let n = pxms.len();
    let mut warnings = Vec::new();
    let mut unreachable = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .filter(|&(i, j)| i != j && m[i][j] == UNREACHABLE)
        .peekable();
    if unreachable.peek().is_some() {
        let list = capped_join_by(unreachable, " ", |out, (i, j)| {
            let _ = write!(out, "[{}][{}]", pxms[i], pxms[j]);
        });
        warnings.push(format!(
            "SLIT entries {list}: distance 255 (unreachable): kept as given; such nodes come last in fallback order"
        ));
    }
    let mut asym = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .filter(|&(i, j)| m[i][j] != m[j][i])
        .peekable();
    if asym.peek().is_some() {
        let list = capped_join_by(asym, ", ", |out, (i, j)| {
            let _ = write!(
                out,
                "[{}][{}]={} [{}][{}]={}",
                pxms[i], pxms[j], m[i][j], pxms[j], pxms[i], m[j][i]
            );
        });
        warnings.push(format!(
            "SLIT: asymmetric distances {list}: kept as given (legal)"
        ));
    }
    warnings
}

/// Parses a SLIT. `Err` says why the whole table cannot be used (one warning line).
pub fn parse(bytes: &[u8]) -> Result<Slit, String> {
    let table = sdt::check_table(bytes, b"SLIT", SLIT_FIXED_BYTES)?;
    let count = sdt::u64_at(table, 36).unwrap_or(0);
    let room = (table.len() - SLIT_FIXED_BYTES) as u64;
    let needed = count.checked_mul(count).filter(|&n| n <= room);
    let Some(needed) = needed else {
        return Err(format!(
            "SLIT: truncated table ({count} localities need {count}x{count} bytes, {room} present)"
        ));
    };
    if count == 0 {
        return Err("SLIT: 0 localities".into());
    }
    let n = count as usize;
    let matrix = table[SLIT_FIXED_BYTES..SLIT_FIXED_BYTES + needed as usize].to_vec();
    let mut slit = Slit {
        localities: n,
        matrix,
        dump: Vec::new(),
        warnings: Vec::new(),
    };
    if room > needed {
        slit.warnings.push(format!(
            "SLIT: {} bytes after the {n}x{n} matrix: ignored",
            room - needed
        ));
    }
    for i in 0..n {
        let row: Vec<String> = slit.matrix[i * n..(i + 1) * n]
            .iter()
            .map(|d| format!("{d}"))
            .collect();
        slit.dump
            .push(format!("SLIT locality {i}: {}", row.join(" ")));
    }
    Ok(slit)
}

/// Test and host-test helpers that write SLIT bytes.
pub mod build {
    use alloc::vec::Vec;

    /// A SLIT from a full matrix (row = from).
    pub fn slit(matrix: &[Vec<u8>]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&(matrix.len() as u64).to_le_bytes());
        for row in matrix {
            body.extend_from_slice(row);
        }
        super::sdt::build_table(b"SLIT", 1, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::build::slit;
    use super::*;
    use alloc::vec;

    fn m4() -> Vec<Vec<u8>> {
        vec![
            vec![10, 16, 32, 32],
            vec![16, 10, 32, 32],
            vec![32, 32, 10, 16],
            vec![32, 32, 16, 10],
        ]
    }

    #[test]
    fn valid_matrix() {
        let s = parse(&slit(&m4())).unwrap();
        assert_eq!(s.localities, 4);
        assert_eq!(s.get(2, 0), Some(32));
        assert_eq!(s.dump[0], "SLIT locality 0: 10 16 32 32");
        let (m, w) = s.distances_for(&[0, 1, 2, 3]).unwrap();
        assert_eq!(m, m4());
        assert!(w.is_empty());
        let (m, _) = s.distances_for(&[1, 3]).unwrap();
        assert_eq!(m, vec![vec![10, 32], vec![32, 10]]);
    }

    #[test]
    fn fewer_localities_and_truncation() {
        // Fewer localities than domains: Linux's acpi_numa_slit_init uses the rows there are.
        let s = parse(&slit(&[vec![10, 15], vec![15, 10]])).unwrap();
        let (m, w) = s.distances_for(&[0, 1, 2]).unwrap();
        assert_eq!(
            m,
            vec![vec![10, 15, 20], vec![15, 10, 20], vec![20, 20, 10]]
        );
        assert!(w[0].contains("no row for PXM 2"), "{w:?}");
        let mut t = slit(&m4());
        t[36] = 5; // claims 5 localities, holds 16 bytes
        sdt::fix_checksum(&mut t);
        assert!(parse(&t).unwrap_err().contains("truncated"));
        let mut t = slit(&m4());
        t[36..44].copy_from_slice(&u64::MAX.to_le_bytes());
        sdt::fix_checksum(&mut t);
        assert!(parse(&t).unwrap_err().contains("truncated"));
    }

    #[test]
    fn bad_self_and_remote_distances_reject_the_slit() {
        let s = parse(&slit(&[vec![10, 20], vec![20, 12]])).unwrap();
        assert!(s
            .distances_for(&[0, 1])
            .unwrap_err()
            .contains("SLIT entry [1][1]: self-distance 12"));
        let s = parse(&slit(&[vec![10, 5], vec![20, 10]])).unwrap();
        assert!(s
            .distances_for(&[0, 1])
            .unwrap_err()
            .contains("SLIT entry [0][1]: remote distance 5"));
    }

    /// Linux's slit_valid() (drivers/acpi/numa/srat.c) checks every locality,
    /// phantom ones included: 10 to self, more than 10 (LOCAL_DISTANCE) to any other.
    #[test]
    fn linux_slit_valid_rule_every_locality_and_remote_above_10() {
        // A four-socket table with an all-10 matrix: Linux ignores it and uses 10/20.
        let s = parse(&slit(&vec![vec![10u8; 4]; 4])).unwrap();
        let e = s.distances_for(&[0, 1, 2, 3]).unwrap_err();
        assert!(
            e.starts_with("SLIT entry [0][1]: remote distance 10, must be above 10")
                && e.ends_with("SLIT not used, default distances 10/20"),
            "{e}"
        );
        // Locality 1 is no node's domain (phantom), and its self-distance is 0.
        let s = parse(&slit(&[
            vec![10, 20, 20],
            vec![20, 0, 20],
            vec![20, 20, 10],
        ]))
        .unwrap();
        let e = s.distances_for(&[0, 2]).unwrap_err();
        assert!(
            e.starts_with("SLIT entry [1][1] (locality 1 is no node's domain): self-distance 0"),
            "{e}"
        );
        // A phantom's remote distance of 10 rejects the table too.
        let s = parse(&slit(&[
            vec![10, 20, 20],
            vec![10, 10, 20],
            vec![20, 20, 10],
        ]))
        .unwrap();
        let e = s.distances_for(&[0, 2]).unwrap_err();
        assert!(
            e.starts_with("SLIT entry [1][0] (locality 1 is no node's domain): remote distance 10"),
            "{e}"
        );
        // Valid phantoms are skipped as before.
        let s = parse(&slit(&[
            vec![10, 20, 30],
            vec![20, 10, 20],
            vec![30, 20, 10],
        ]))
        .unwrap();
        assert_eq!(
            s.distances_for(&[0, 2]).unwrap().0,
            vec![vec![10, 30], vec![30, 10]]
        );
    }

    #[test]
    fn unreachable_and_asymmetric_are_kept() {
        let s = parse(&slit(&[vec![10, 255], vec![25, 10]])).unwrap();
        let (m, w) = s.distances_for(&[0, 1]).unwrap();
        assert_eq!(m, vec![vec![10, 255], vec![25, 10]]);
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("[0][1]") && w[0].contains("unreachable"));
        assert!(w[1].contains("asymmetric"));
    }
}
