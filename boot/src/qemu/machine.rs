//! A machine in QEMU's own terms (`-smp`, `-m`, `-object memory-backend-*`, `-numa`), typed:
//! what the user writes after `--` is parsed into it once, presets and replayed machines
//! build it, and [`QemuMachine::args`] renders it to QEMU arguments in one place. The runner
//! reads the CPU count and memory from the fields and asks for `-smp K,maxcpus=N` through
//! [`QemuMachine::args`], never by editing argument strings.

use std::fmt::Write as _;

/// `-smp`: CPUs present at boot, the most there can be, and the CPU topology keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Smp {
    /// `cpus=` (or the leading number); None: QEMU's default from the topology keys.
    pub cpus: Option<u32>,
    pub maxcpus: Option<u32>,
    /// `sockets=`, `dies=`, `clusters=`, `cores=`, `threads=`, ... in the order given.
    pub topology: Vec<(String, u32)>,
}

/// `-object memory-backend-*,id=ID,size=S[,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    /// `memory-backend-ram`, `memory-backend-memfd`, ...
    pub kind: String,
    pub id: String,
    pub size_mib: u64,
    /// Other `key=value` words, kept in order.
    pub other: Vec<String>,
}

/// One `-numa` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Numa {
    /// `node[,nodeid=N][,cpus=A[-B]]...[,memdev=ID][,initiator=N]`.
    Node {
        nodeid: Option<u32>,
        /// Inclusive CPU ranges, one per `cpus=` word.
        cpus: Vec<(u32, u32)>,
        memdev: Option<String>,
        initiator: Option<u32>,
    },
    /// `dist,src=A,dst=B,val=D`.
    Dist { src: u32, dst: u32, val: u8 },
    /// Any other item (`cpu,...`, `hmat-lb,...`, a node with other keys), passed as written.
    Other(String),
}

/// A whole machine in QEMU's terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QemuMachine {
    pub smp: Smp,
    /// `-m` in MiB; None: QEMU's default (128 MiB).
    pub mem_mib: Option<u64>,
    pub backends: Vec<Backend>,
    pub numa: Vec<Numa>,
}

/// QEMU's defaults when `-smp` or `-m` is absent.
const DEFAULT_CPUS: u32 = 1;
const DEFAULT_MEM_MIB: u64 = 128;

impl QemuMachine {
    /// A machine of `cpus` CPUs and `mem_mib` MiB with no NUMA items (QEMU writes no SRAT).
    pub fn uma(cpus: u32, mem_mib: u64) -> QemuMachine {
        QemuMachine {
            smp: Smp {
                cpus: Some(cpus),
                ..Smp::default()
            },
            mem_mib: Some(mem_mib),
            ..QemuMachine::default()
        }
    }

    /// CPUs present at boot.
    pub fn cpus(&self) -> u32 {
        self.smp.cpus.or(self.smp.maxcpus).unwrap_or_else(|| {
            let product: u32 = self.smp.topology.iter().map(|(_, n)| *n).product();
            if self.smp.topology.is_empty() {
                DEFAULT_CPUS
            } else {
                product
            }
        })
    }

    /// The most CPUs the machine can have (`maxcpus`, else the CPUs present).
    pub fn max_cpus(&self) -> u32 {
        self.smp.maxcpus.unwrap_or_else(|| self.cpus())
    }

    /// Memory in MiB (QEMU's 128 when `-m` is absent).
    pub fn mem_mib(&self) -> u64 {
        self.mem_mib.unwrap_or(DEFAULT_MEM_MIB)
    }

    /// Whether the machine has a node with CPUs and no memory (or is one node), as the
    /// memoryless-node experiment needs; None when the items do not say (a `-numa` item kept
    /// as written, or nodes without `memdev=` where none has one: QEMU then splits memory).
    pub fn has_memoryless_cpu_node(&self) -> Option<bool> {
        let nodes: Vec<(&Vec<(u32, u32)>, bool)> = self
            .numa
            .iter()
            .filter_map(|n| match n {
                Numa::Node { cpus, memdev, .. } => Some((cpus, memdev.is_some())),
                _ => None,
            })
            .collect();
        if self.numa.iter().any(|n| matches!(n, Numa::Other(_))) {
            return None;
        }
        if nodes.len() <= 1 {
            return Some(true);
        }
        if !nodes.iter().any(|(_, has_mem)| *has_mem) {
            return None;
        }
        Some(
            nodes
                .iter()
                .any(|(cpus, has_mem)| !cpus.is_empty() && !has_mem),
        )
    }

    /// The QEMU arguments; with `online`, only that many CPUs are present at boot
    /// (`-smp ONLINE,maxcpus=MAX`: every node and every CPU's place in the SRAT kept).
    pub fn args(&self, online: Option<u32>) -> Vec<String> {
        let mut args = Vec::new();
        let smp = self.smp_text(online);
        if !smp.is_empty() {
            args.extend(["-smp".to_string(), smp]);
        }
        if let Some(m) = self.mem_mib {
            args.extend(["-m".to_string(), format!("{m}M")]);
        }
        for b in &self.backends {
            let mut text = format!("{},size={}M,id={}", b.kind, b.size_mib, b.id);
            for w in &b.other {
                text.push(',');
                text.push_str(w);
            }
            args.extend(["-object".to_string(), text]);
        }
        for n in &self.numa {
            args.extend(["-numa".to_string(), n.text()]);
        }
        args
    }

    fn smp_text(&self, online: Option<u32>) -> String {
        let mut words = Vec::new();
        match online {
            Some(k) => {
                words.push(k.to_string());
                words.push(format!("maxcpus={}", self.max_cpus()));
            }
            None => {
                if let Some(c) = self.smp.cpus {
                    words.push(c.to_string());
                }
                if let Some(m) = self.smp.maxcpus {
                    words.push(format!("maxcpus={m}"));
                }
            }
        }
        words.extend(self.smp.topology.iter().map(|(k, v)| format!("{k}={v}")));
        words.join(",")
    }
}

impl Numa {
    fn text(&self) -> String {
        match self {
            Numa::Node {
                nodeid,
                cpus,
                memdev,
                initiator,
            } => {
                let mut t = String::from("node");
                if let Some(id) = nodeid {
                    let _ = write!(t, ",nodeid={id}");
                }
                for (a, b) in cpus {
                    if a == b {
                        let _ = write!(t, ",cpus={a}");
                    } else {
                        let _ = write!(t, ",cpus={a}-{b}");
                    }
                }
                if let Some(m) = memdev {
                    let _ = write!(t, ",memdev={m}");
                }
                if let Some(i) = initiator {
                    let _ = write!(t, ",initiator={i}");
                }
                t
            }
            Numa::Dist { src, dst, val } => format!("dist,src={src},dst={dst},val={val}"),
            Numa::Other(text) => text.clone(),
        }
    }
}

/// Whether `args` (QEMU arguments) describe a machine: any `-smp`, `-m`, `-numa` or
/// `-object memory-backend-*`.
pub fn describes_machine(args: &[String]) -> bool {
    machine_word(args).is_some()
}

/// The first argument of `args` that describes the machine (`-smp`, `-m`, `-numa`, or a
/// `memory-backend-*` object).
pub fn machine_word(args: &[String]) -> Option<&str> {
    args.iter().enumerate().find_map(|(i, a)| {
        let backend = a == "-object"
            && args
                .get(i + 1)
                .is_some_and(|v| v.starts_with("memory-backend"));
        (is_machine_flag(a) || backend).then_some(a.as_str())
    })
}

fn is_machine_flag(a: &str) -> bool {
    matches!(a, "-smp" | "-m" | "-numa")
}

/// Splits QEMU arguments into the machine they describe (None when they describe none) and
/// every other argument, in order. `Err` is one line naming the argument that cannot be read.
pub fn split(args: &[String]) -> Result<(Option<QemuMachine>, Vec<String>), String> {
    let mut m = QemuMachine::default();
    let mut described = false;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let value = args.get(i + 1).map(String::as_str);
        let is_backend =
            flag == "-object" && value.is_some_and(|v| v.starts_with("memory-backend"));
        if !is_machine_flag(flag) && !is_backend {
            rest.push(args[i].clone());
            i += 1;
            continue;
        }
        let v = value.ok_or_else(|| format!("'{flag}' without a value in the QEMU arguments"))?;
        described = true;
        match flag {
            "-smp" => m.smp = parse_smp(v)?,
            "-m" => m.mem_mib = Some(parse_m(v)?),
            "-numa" => m.numa.push(parse_numa(v)?),
            _ => m.backends.push(parse_backend(v)?),
        }
        i += 2;
    }
    Ok((described.then_some(m), rest))
}

/// Parses a size as QEMU writes it: `512M`, `2G`, `1024` (MiB) into MiB.
pub fn parse_size_mib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mul) = match t.chars().last()? {
        'G' | 'g' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1),
        _ => (t, 1),
    };
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mul))
}

fn number<T: std::str::FromStr>(what: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{what}: '{v}' is not a number"))
}

fn parse_smp(v: &str) -> Result<Smp, String> {
    let mut smp = Smp::default();
    for (k, word) in v.split(',').enumerate() {
        match word.split_once('=') {
            None if k == 0 => smp.cpus = Some(number("-smp", word)?),
            None => return Err(format!("-smp {v}: '{word}' is not KEY=VALUE")),
            Some(("cpus", n)) => smp.cpus = Some(number("-smp cpus", n)?),
            Some(("maxcpus", n)) => smp.maxcpus = Some(number("-smp maxcpus", n)?),
            Some((key, n)) => smp
                .topology
                .push((key.to_string(), number(&format!("-smp {key}"), n)?)),
        }
    }
    Ok(smp)
}

fn parse_m(v: &str) -> Result<u64, String> {
    let size = match v.split_once("size=") {
        Some((_, rest)) => rest.split(',').next().unwrap_or(""),
        None => v.split(',').next().unwrap_or(""),
    };
    parse_size_mib(size).ok_or_else(|| format!("-m {v}: '{size}' is not a size (512M, 2G, or MiB)"))
}

fn parse_backend(v: &str) -> Result<Backend, String> {
    let mut words = v.split(',');
    let kind = words.next().unwrap_or("").to_string();
    let (mut id, mut size_mib, mut other) = (None, None, Vec::new());
    for w in words {
        match w.split_once('=') {
            Some(("id", x)) => id = Some(x.to_string()),
            Some(("size", x)) => {
                size_mib = Some(
                    parse_size_mib(x)
                        .ok_or_else(|| format!("-object {v}: size '{x}' is not a size"))?,
                )
            }
            _ => other.push(w.to_string()),
        }
    }
    Ok(Backend {
        kind,
        id: id.ok_or_else(|| format!("-object {v}: no id="))?,
        size_mib: size_mib.ok_or_else(|| format!("-object {v}: no size="))?,
        other,
    })
}

fn parse_numa(v: &str) -> Result<Numa, String> {
    let mut words = v.split(',');
    let kind = words.next().unwrap_or("");
    let pairs: Vec<(&str, &str)> = words.filter_map(|w| w.split_once('=')).collect();
    let well_formed = v.split(',').skip(1).all(|w| w.contains('='));
    match kind {
        "node"
            if well_formed
                && pairs
                    .iter()
                    .all(|(k, _)| matches!(*k, "nodeid" | "cpus" | "memdev" | "initiator")) =>
        {
            let (mut nodeid, mut cpus, mut memdev, mut initiator) = (None, Vec::new(), None, None);
            for (k, x) in pairs {
                match k {
                    "nodeid" => nodeid = Some(number("-numa node nodeid", x)?),
                    "cpus" => cpus.push(match x.split_once('-') {
                        Some((a, b)) => {
                            (number("-numa node cpus", a)?, number("-numa node cpus", b)?)
                        }
                        None => {
                            let c = number("-numa node cpus", x)?;
                            (c, c)
                        }
                    }),
                    "memdev" => memdev = Some(x.to_string()),
                    _ => initiator = Some(number("-numa node initiator", x)?),
                }
            }
            Ok(Numa::Node {
                nodeid,
                cpus,
                memdev,
                initiator,
            })
        }
        "dist" if well_formed && pairs.len() == 3 => {
            let get = |key: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, x)| *x)
                    .ok_or_else(|| format!("-numa {v}: no {key}="))
            };
            Ok(Numa::Dist {
                src: number("-numa dist src", get("src")?)?,
                dst: number("-numa dist dst", get("dst")?)?,
                val: number("-numa dist val", get("val")?)?,
            })
        }
        "" => Err(format!("-numa '{v}': empty item")),
        _ => Ok(Numa::Other(v.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_user_machine_is_read_once_and_rendered_back() {
        let text = "-smp 8 -m 2G -object memory-backend-ram,size=1G,id=m0 \
                    -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7 \
                    -numa dist,src=0,dst=1,val=21 -d int";
        let (m, rest) = split(&words(text)).unwrap();
        let m = m.unwrap();
        assert_eq!(rest, words("-d int"));
        assert_eq!((m.cpus(), m.max_cpus(), m.mem_mib()), (8, 8, 2048));
        assert_eq!(
            m.args(None).join(" "),
            "-smp 8 -m 2048M -object memory-backend-ram,size=1024M,id=m0 \
             -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7 \
             -numa dist,src=0,dst=1,val=21"
        );
        // Only some CPUs present: the same nodes, `-smp K,maxcpus=N` from the fields.
        assert_eq!(m.args(Some(1))[..2], words("-smp 1,maxcpus=8")[..]);
    }

    #[test]
    fn smp_forms_and_unknown_numa_items_keep_their_meaning() {
        let (m, _) = split(&words(
            "-smp cpus=4,maxcpus=16,sockets=2,cores=8 -numa cpu,node-id=0,socket-id=0",
        ))
        .unwrap();
        let m = m.unwrap();
        assert_eq!((m.cpus(), m.max_cpus(), m.mem_mib()), (4, 16, 128));
        assert_eq!(
            m.args(Some(2)).join(" "),
            "-smp 2,maxcpus=16,sockets=2,cores=8 -numa cpu,node-id=0,socket-id=0"
        );
        let (m, _) = split(&words("-smp sockets=2,cores=3")).unwrap();
        assert_eq!(m.unwrap().cpus(), 6);
    }

    #[test]
    fn the_memoryless_shape_is_read_from_the_nodes() {
        let shape = |text: &str| {
            split(&words(text))
                .unwrap()
                .0
                .unwrap()
                .has_memoryless_cpu_node()
        };
        let memoryless = "-smp 8 -object memory-backend-ram,size=1G,id=m1 \
                          -numa node,nodeid=0,cpus=0-3 -numa node,nodeid=1,cpus=4-7,memdev=m1";
        assert_eq!(shape(memoryless), Some(true));
        assert_eq!(shape("-smp 8 -m 1G"), Some(true), "one node");
        let both =
            "-object memory-backend-ram,size=1G,id=m0 -object memory-backend-ram,size=1G,id=m1 \
                    -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1";
        assert_eq!(shape(both), Some(false));
        assert_eq!(
            shape("-numa node,cpus=0 -numa node,cpus=1"),
            None,
            "QEMU splits the memory"
        );
    }

    #[test]
    fn no_machine_words_no_machine() {
        let (m, rest) = split(&words("-d int -s")).unwrap();
        assert!(m.is_none());
        assert_eq!(rest, words("-d int -s"));
        // Another -object is not a memory backend: passed through.
        let (m, rest) = split(&words("-object rng-random,id=r0")).unwrap();
        assert!(m.is_none() && rest.len() == 2);
    }

    #[test]
    fn unreadable_machine_words_are_one_line_errors() {
        for (text, says) in [
            ("-smp", "'-smp' without a value"),
            ("-smp eight", "-smp: 'eight' is not a number"),
            ("-smp 4,sockets", "'sockets' is not KEY=VALUE"),
            ("-m lots", "-m lots: 'lots' is not a size"),
            (
                "-numa dist,src=0,dst=1,val=999",
                "-numa dist val: '999' is not a number",
            ),
            ("-object memory-backend-ram,id=m0", "no size="),
        ] {
            let e = split(&words(text)).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
