//! The traced side by side as text (fixed-width, in the style of the twin's table.rs: two
//! spaces between columns, names left, figures right) and as an HTML fragment (the report's
//! `twin` table class); a missing figure is `-[N]`, footnote N saying why.

use super::{Cell, MoveVerdict, Table, Verdict};
use crate::bench::fmt_value;
use crate::report::escape::escape;
use std::fmt::Write as _;

/// Footnotes of one table: each distinct reason once, numbered from 1.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    /// The marker of `why` (`[N]`), adding it if new.
    fn mark(&mut self, why: &str) -> String {
        let i = match self.0.iter().position(|w| w == why) {
            Some(i) => i,
            None => {
                self.0.push(why.to_string());
                self.0.len() - 1
            }
        };
        format!("[{}]", i + 1)
    }

    fn text(&self) -> String {
        let mut s = String::new();
        for (i, w) in self.0.iter().enumerate() {
            let _ = writeln!(s, "   [{}] {w}", i + 1);
        }
        s
    }

    fn html(&self) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let items: Vec<String> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, w)| format!("<li>[{}] {}</li>", i + 1, escape(w)))
            .collect();
        format!("<ul class=\"note\">\n{}\n</ul>\n", items.join("\n"))
    }
}

/// A figure's text, or `-[N]`.
fn figure(c: &Cell, notes: &mut Notes) -> String {
    match c {
        Ok(v) => fmt_value(*v),
        Err(why) => format!("-{}", notes.mark(why)),
    }
}

/// A ratio's text (3 decimals), or `-[N]`.
fn ratio(c: &Cell, notes: &mut Notes) -> String {
    match c {
        Ok(v) => format!("{v:.3}"),
        Err(why) => format!("-{}", notes.mark(why)),
    }
}

/// A change in percent, or `-`.
fn pct(c: &Cell) -> String {
    match c {
        Ok(v) if v.is_infinite() => format!("{}inf%", if *v > 0.0 { "+" } else { "-" }),
        Ok(v) => format!("{:+.1}%", v * 100.0),
        Err(_) => "-".into(),
    }
}

/// A case pair's cell: `same (+4.1% | +2.5%)`, or `n/a[N]`.
fn moved(m: &MoveVerdict, notes: &mut Notes) -> String {
    match m.verdict.strip_prefix("n/a (") {
        Some(why) => format!("n/a{}", notes.mark(why.strip_suffix(')').unwrap_or(why))),
        None => format!("{} ({} | {})", m.verdict, pct(&m.numalab), pct(&m.linux)),
    }
}

/// Line names with repeats folded, in order: `[dynamic] x2` for two lines of that name.
fn folded(names: &[String]) -> Vec<String> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match out.iter_mut().find(|(m, _)| *m == n.as_str()) {
            Some((_, k)) => *k += 1,
            None => out.push((n, 1)),
        }
    }
    out.into_iter()
        .map(|(n, k)| {
            if k == 1 {
                n.to_string()
            } else {
                format!("{n} x{k}")
            }
        })
        .collect()
}

/// `head` and `rows` aligned: the first column left, the others right, two spaces apart.
fn aligned(head: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// An HTML table: `head`, then `rows` of cells already in HTML (the first column text, the
/// others numeric).
fn html_table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut t = String::from("<table class=\"twin\">\n<thead><tr>");
    for h in head {
        let _ = write!(t, "<th>{}</th>", escape(h));
    }
    t.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        t.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            if i == 0 {
                let _ = write!(t, "<td>{c}</td>");
            } else {
                let _ = write!(t, "<td class=\"num\">{c}</td>");
            }
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</tbody></table>\n");
    t
}

/// A table's title: `slub_list_lock: linux_default | linux/default, cpus 8`.
fn title(t: &Table) -> String {
    let p = &t.pairing;
    format!(
        "{}: {} | {}, cpus {}",
        p.bench,
        p.case.unwrap_or("the design's case"),
        p.linux.unwrap_or("(none)"),
        t.cpus
    )
}

/// Whether `t` is the console's: its pairing's largest CPU count.
fn largest(tables: &[Table], t: &Table) -> bool {
    tables
        .iter()
        .filter(|x| x.pairing == t.pairing)
        .all(|x| x.cpus <= t.cpus)
}

/// One verdict's ratio tables and case pair tables per experiment and CPU count (None: every
/// count; Some(f): those `f` keeps), as (title, head, rows, notes).
type Part = (String, Vec<String>, Vec<Vec<String>>, Notes);

fn verdict_parts(v: &Verdict, keep: &dyn Fn(&str, Option<u32>) -> bool) -> Vec<Part> {
    let mut benches: Vec<&str> = Vec::new();
    for r in &v.ratios {
        if !benches.contains(&r.pairing.bench) {
            benches.push(r.pairing.bench);
        }
    }
    let mut out = Vec::new();
    for bench in benches {
        let mut cpus: Vec<u32> = v
            .ratios
            .iter()
            .filter(|r| r.pairing.bench == bench)
            .map(|r| r.cpus)
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        for c in cpus.into_iter().filter(|c| keep(bench, Some(*c))) {
            let mine: Vec<_> = v
                .ratios
                .iter()
                .filter(|r| r.pairing.bench == bench && r.cpus == c)
                .collect();
            let mut cases: Vec<String> = Vec::new();
            for r in &mine {
                let case = r.pairing.case.unwrap_or(v.design).to_string();
                if !cases.contains(&case) {
                    cases.push(case);
                }
            }
            let mut notes = Notes::default();
            let mut head = vec!["figure".to_string()];
            head.extend(cases.iter().cloned());
            let rows = super::FIGURES
                .iter()
                .map(|f| {
                    let mut row = vec![f.to_string()];
                    for case in &cases {
                        let cell = mine
                            .iter()
                            .find(|r| r.figure == *f && r.pairing.case.unwrap_or(v.design) == case);
                        row.push(cell.map_or("-".into(), |r| ratio(&r.ratio, &mut notes)));
                    }
                    row
                })
                .collect();
            let t = format!(
                "{bench}, cpus {c}: ratio numalab {} / {}",
                v.design, v.kernel_name
            );
            out.push((t, head, rows, notes));
        }
        let mut groups: Vec<Option<u32>> = Vec::new();
        for m in v.moves.iter().filter(|m| m.bench == bench) {
            if !groups.contains(&m.cpus) && keep(bench, m.cpus) {
                groups.push(m.cpus);
            }
        }
        for g in groups {
            let mine: Vec<&MoveVerdict> = v
                .moves
                .iter()
                .filter(|m| m.bench == bench && m.cpus == g)
                .collect();
            let mut labels: Vec<String> = Vec::new();
            for m in &mine {
                if !labels.contains(&m.label) {
                    labels.push(m.label.clone());
                }
            }
            let mut notes = Notes::default();
            let mut head = vec!["figure".to_string()];
            head.extend(labels.iter().cloned());
            let rows = super::FIGURES
                .iter()
                .map(|f| {
                    let mut row = vec![f.to_string()];
                    for l in &labels {
                        let m = mine.iter().find(|m| m.figure == *f && &m.label == l);
                        row.push(m.map_or("-".into(), |m| moved(m, &mut notes)));
                    }
                    row
                })
                .collect();
            let at = g.map_or("across CPU counts".to_string(), |c| format!("cpus {c}"));
            let t = format!(
                "{bench}, {at}: does B vs A move the same way? (change in numalab {} | in {}; \
                 |change| <= 2%: flat)",
                v.design, v.kernel_name
            );
            out.push((t, head, rows, notes));
        }
    }
    out
}

/// The largest CPU count of `bench` in `v`'s ratios.
fn max_cpus(v: &Verdict, bench: &str) -> Option<u32> {
    v.ratios
        .iter()
        .filter(|r| r.pairing.bench == bench)
        .map(|r| r.cpus)
        .max()
}

/// The console text: each table at its pairing's largest CPU count, then the verdicts.
pub fn console(tables: &[Table], verdicts: &[Verdict]) -> String {
    let mut out = String::from(
        "== traced side by side: det boots under --trace mem, one cost model; numalab's SLUB \
         designs against Linux 6.1 and 7.x, each table at its most CPUs (the HTML report has \
         every CPU count) ==\n",
    );
    for t in tables.iter().filter(|t| largest(tables, t)) {
        let mut notes = Notes::default();
        let mut head = vec!["figure".to_string()];
        head.extend(t.columns.iter().map(|(_, h)| h.clone()));
        let rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|(f, cells)| {
                let mut row = vec![f.to_string()];
                row.extend(cells.iter().map(|c| figure(c, &mut notes)));
                row
            })
            .collect();
        let _ = writeln!(out, "-- {}", title(t));
        out.push_str(&aligned(&head, &rows));
        let _ = writeln!(out, "   hottest lines (by HITM, then records):");
        for ((_, h), hot) in t.columns.iter().zip(&t.hot) {
            let names = match hot {
                Ok(n) if n.is_empty() => "(no lines)".to_string(),
                Ok(n) => folded(n).join("; "),
                Err(why) => format!("-{}", notes.mark(why)),
            };
            let _ = writeln!(out, "     {h}: {names}");
        }
        out.push_str(&notes.text());
    }
    for v in verdicts {
        let _ = writeln!(
            out,
            "\n== verdict: numalab {} against {} (ratio numalab/Linux, below 1: numalab less; \
             each experiment at its most CPUs) ==",
            v.design, v.kernel_name
        );
        let keep = |bench: &str, c: Option<u32>| c.is_none() || c == max_cpus(v, bench);
        for (t, head, rows, notes) in verdict_parts(v, &keep) {
            // A table with no figure and one reason is that reason.
            let none = rows
                .iter()
                .all(|r| r[1..].iter().all(|c| c.contains("[1]")));
            if none && notes.0.len() == 1 {
                let _ = writeln!(out, "-- {t}: n/a, {}", notes.0[0]);
                continue;
            }
            let _ = writeln!(out, "-- {t}");
            out.push_str(&aligned(&head, &rows));
            out.push_str(&notes.text());
        }
    }
    out
}

/// The HTML fragment: a section with every table at every CPU count, then the verdicts.
pub fn html(tables: &[Table], verdicts: &[Verdict]) -> String {
    let mut out = String::from(
        "<section id=\"twin-traced\">\n<h2>Linux twin, traced</h2>\n<p class=\"note\">Det \
         boots under <code>--trace mem</code>, one cost model: numalab's SLUB designs against \
         Linux 6.1 and 7.x, per experiment, case pairing and CPU count. A missing figure is \
         <code>-[N]</code>, footnote N saying why.</p>\n",
    );
    for t in tables {
        let mut notes = Notes::default();
        let mut head = vec!["figure".to_string()];
        head.extend(t.columns.iter().map(|(_, h)| h.clone()));
        let mut rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|(f, cells)| {
                let mut row = vec![escape(f)];
                row.extend(cells.iter().map(|c| escape(&figure(c, &mut notes))));
                row
            })
            .collect();
        let mut hot = vec!["hottest lines".to_string()];
        hot.extend(t.hot.iter().map(|h| {
            match h {
                Ok(n) => folded(n)
                    .iter()
                    .map(|s| escape(s))
                    .collect::<Vec<_>>()
                    .join("<br>"),
                Err(why) => escape(&format!("-{}", notes.mark(why))),
            }
        }));
        rows.push(hot);
        let _ = writeln!(out, "<h3>{}</h3>", escape(&title(t)));
        out.push_str(&html_table(&head, &rows));
        out.push_str(&notes.html());
    }
    for v in verdicts {
        let _ = writeln!(
            out,
            "<h3>Verdict: numalab {} against {}</h3>",
            escape(v.design),
            escape(&v.kernel_name)
        );
        for (t, head, rows, notes) in verdict_parts(v, &|_, _| true) {
            let rows: Vec<Vec<String>> = rows
                .into_iter()
                .map(|r| r.into_iter().map(|c| escape(&c)).collect())
                .collect();
            let _ = writeln!(out, "<h4>{}</h4>", escape(&t));
            out.push_str(&html_table(&head, &rows));
            out.push_str(&notes.html());
        }
    }
    out.push_str("</section>\n");
    out
}
