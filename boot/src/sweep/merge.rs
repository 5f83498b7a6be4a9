//! Merging a sweep's job folders into one run: each job's JSONL read back, its variant (the
//! topology and whatever else tells it from the other jobs), the git revision check, and the
//! merged JSONL (a header naming it a merged sweep with every job's header, then every record
//! with its variant and job) beside one run folder with a subfolder per job.

use crate::bench::{read_jsonl, BenchRecord};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One job's results, as its `bench --out` folder holds them.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// The folder's name (the job's name in a sweep).
    pub name: String,
    pub dir: PathBuf,
    /// `<date>-<rev>`: the JSONL is `dir/STEM.jsonl`, its run folder `dir/STEM/`.
    pub stem: String,
    pub header: Value,
    pub records: Vec<BenchRecord>,
}

/// Reads the job folder `dir`: it must hold exactly one bench JSONL, with a header.
pub fn load(dir: &Path) -> Result<JobResult, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read: {e}", dir.display()))?;
    let mut jsonls: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    jsonls.sort();
    let jsonl = match jsonls.as_slice() {
        [one] => one.clone(),
        // A job interrupted while writing its results left only STEM.jsonl.partial.
        [] if partial_jsonl(dir).is_some() => {
            return Err(partial_jsonl(dir)
                .and_then(|p| crate::qemu::interrupt::partial_problem(&p))
                .unwrap_or_default())
        }
        [] => {
            return Err(format!(
                "{}: no bench JSONL in this folder (a job folder holds one <date>-<rev>.jsonl)",
                dir.display()
            ))
        }
        more => {
            return Err(format!(
                "{}: {} JSONL files; a job folder holds one run's",
                dir.display(),
                more.len()
            ))
        }
    };
    let text = std::fs::read_to_string(&jsonl)
        .map_err(|e| format!("{}: cannot read: {e}", jsonl.display()))?;
    // A last line without its newline is a write cut short (a job killed mid-line, a copy
    // not finished): said as such, not as a JSON error.
    if let Some(last) = text.lines().last().filter(|_| !text.ends_with('\n')) {
        if serde_json::from_str::<Value>(last).is_err() {
            return Err(format!(
                "{}: line {} is cut short (the file ends mid-line, without its newline): the \
                 job was interrupted or its copy is partial; rerun the job or copy it again",
                jsonl.display(),
                text.lines().count()
            ));
        }
    }
    let (header, records) = read_jsonl(&text).map_err(|v| {
        format!(
            "{}: {}",
            jsonl.display(),
            v.first().map_or(String::new(), |v| format!(
                "line {}: {}",
                v.line_no, v.message
            ))
        )
    })?;
    let header = header.ok_or_else(|| format!("{}: no header line", jsonl.display()))?;
    let stem_dir = dir.join(jsonl.file_stem().unwrap_or_default());
    if let Some(why) = link_to_a_folder(&stem_dir) {
        return Err(why);
    }
    if header.get("merged").is_some() {
        return Err(format!(
            "{}: already a merged sweep; merge the job folders",
            jsonl.display()
        ));
    }
    let stem = jsonl
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| stem.clone());
    Ok(JobResult {
        name,
        dir: dir.to_path_buf(),
        stem,
        header,
        records,
    })
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), String::from)
}

/// What a job's header says about what it ran: its topology first, then every kernel option,
/// `--smp`, `--mem`, the firmware, `smoke`, the kernel(s) and extra QEMU arguments.
pub fn facets(header: &Value) -> Vec<String> {
    let o = &header["options"];
    let mut f = vec![text(&header["topology"])];
    f.extend(o["sets"].as_array().into_iter().flatten().map(text));
    if let Some(n) = o["smp"].as_u64() {
        f.push(format!("smp={n}"));
    }
    if let Some(n) = o["mem_mib"].as_u64() {
        f.push(format!("mem={n}M"));
    }
    f.push(o["firmware"].as_str().unwrap_or("bios").to_string());
    if o["smoke"].as_bool() == Some(true) {
        f.push("smoke".into());
    }
    if let Some(k) = header["kernel"].as_str() {
        f.push(format!("kernel={k}"));
    }
    let extra: Vec<String> = o["extra_qemu_args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    if !extra.is_empty() {
        f.push(format!("qemu: {}", extra.join(" ")));
    }
    f
}

/// Each job's variant: its topology, then the facets that not every job shares (in the
/// job's order), space-separated: `4node slub.design=partial`.
pub fn variants(headers: &[&Value]) -> Vec<String> {
    let all: Vec<Vec<String>> = headers.iter().map(|h| facets(h)).collect();
    all.iter()
        .map(|f| {
            let mut words = vec![f[0].clone()];
            words.extend(
                f[1..]
                    .iter()
                    .filter(|x| !all.iter().all(|other| other[1..].contains(x)))
                    .cloned(),
            );
            words.join(" ")
        })
        .collect()
}

/// The one git revision of `jobs`, or why they are not one run's: the revisions and their
/// jobs.
pub fn revision(jobs: &[JobResult]) -> Result<String, String> {
    let mut by_rev: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for j in jobs {
        by_rev
            .entry(text(&j.header["git_rev"]))
            .or_default()
            .push(&j.name);
    }
    if by_rev.len() == 1 {
        return Ok(by_rev.into_keys().next().unwrap_or_default());
    }
    let list: Vec<String> = by_rev
        .iter()
        .map(|(rev, names)| format!("{rev}: {}", names.join(" ")))
        .collect();
    Err(format!(
        "the jobs ran different git revisions ({}): their figures are of different code; check out one revision on every host and rerun, or pass --force",
        list.join("; ")
    ))
}

/// The merged run of `jobs` (dated `iso`, merged on `host`): its header and its records, each
/// with its job's variant, numbered as repetitions across the jobs of one variant (the second
/// job of a variant continues after the first job's repetitions), each JSON line naming its
/// job. Err when the revisions differ and not `force`.
pub fn merged(
    jobs: &[JobResult],
    force: bool,
    iso: &str,
    host: &str,
) -> Result<(Value, Vec<BenchRecord>, Vec<Value>), String> {
    let rev = match revision(jobs) {
        Ok(rev) => rev,
        Err(_) if force => "mixed".to_string(),
        Err(why) => return Err(why),
    };
    let headers: Vec<&Value> = jobs.iter().map(|j| &j.header).collect();
    let variants = variants(&headers);
    let mut next_rep: BTreeMap<&str, u32> = BTreeMap::new();
    let mut records = Vec::new();
    let mut lines = Vec::new();
    for (job, variant) in jobs.iter().zip(&variants) {
        let first = *next_rep.get(variant.as_str()).unwrap_or(&0);
        let reps = job.header["reps"].as_u64().unwrap_or(1) as u32;
        let seen = job.records.iter().map(|r| r.rep + 1).max().unwrap_or(0);
        next_rep.insert(variant.as_str(), first + reps.max(seen).max(1));
        for r in &job.records {
            let r = BenchRecord {
                rep: first + r.rep,
                variant: Some(variant.clone()),
                ..r.clone()
            };
            let mut line = r.to_json();
            line["job"] = json!(job.name);
            lines.push(line);
            records.push(r);
        }
    }
    let mut unique: Vec<&String> = Vec::new();
    for v in &variants {
        if !unique.contains(&v) {
            unique.push(v);
        }
    }
    let host_cpus = headers.iter().filter_map(|h| h["host_cpus"].as_u64()).min();
    let vcpus = headers.iter().filter_map(|h| h["vcpus"].as_u64()).max();
    let header = json!({
        "record": "header",
        "merged": "sweep",
        "date": iso,
        "git_rev": rev,
        "forced": force && rev == "mixed",
        "host": host,
        "host_cpus": host_cpus.unwrap_or(1),
        "vcpus": vcpus.unwrap_or(1),
        "oversubscribed": headers.iter().any(|h| h["oversubscribed"] == true),
        "variants": unique,
        "jobs": jobs.iter().zip(&variants).map(|(j, v)| json!({
            "job": j.name,
            "variant": v,
            "topology": j.header["topology"],
            "sets": j.header["options"]["sets"],
            "git_rev": j.header["git_rev"],
            "host": j.header["host"],
            "records": j.records.len(),
            "header": j.header,
        })).collect::<Vec<_>>(),
    });
    Ok((header, records, lines))
}

/// Folders deeper than this in a job's run folder are not walked (a run folder is 2 deep).
const MAX_DEPTH: usize = 32;

/// The first symbolic link under `dir` that leads to a folder, or nowhere (a loop, a dangling
/// link), as one line naming it; or a folder nested past [`MAX_DEPTH`]. Links are never
/// followed, so a loop (`loop -> .`) cannot make the merge recurse; a
/// link to a file is copied as the file.
pub fn link_to_a_folder(dir: &Path) -> Option<String> {
    let mut todo = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_symlink() {
                let why = match std::fs::metadata(&p) {
                    Ok(m) if m.is_dir() => "a symbolic link to a folder",
                    Ok(_) => continue,
                    Err(_) => "a symbolic link that leads nowhere (a loop, or a missing target)",
                };
                return Some(format!(
                    "{}: {why}: a job's run folder holds files and folders only; remove the link",
                    p.display()
                ));
            }
            if t.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    return Some(format!(
                        "{}: folders nested more than {MAX_DEPTH} deep in a job's run folder",
                        p.display()
                    ));
                }
                todo.push((p, depth + 1));
            }
        }
    }
    None
}

/// Copies the files under `from` into `to` (folders recursively; a link is never followed
/// into a folder: `load` refused those).
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for e in entries.filter_map(Result::ok) {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            copy_tree(&src, &dst)?;
        } else if src.is_file() {
            std::fs::copy(&src, &dst)
                .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// A `STEM.jsonl.partial` in job folder `dir` (interrupt.rs), if any.
fn partial_jsonl(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_file() && p.to_string_lossy().ends_with(".jsonl.partial"))
}

/// Writes the merged run into `out`: `STEM.jsonl` (header, then `lines`) and `STEM/JOB/` with
/// each job's run folder (logs, charts) and its console `bench.out` when it has one. Returns
/// the JSONL and the run folder.
pub fn write(
    jobs: &[JobResult],
    header: &Value,
    lines: &[Value],
    out: &Path,
    stem: &str,
) -> Result<(PathBuf, PathBuf), String> {
    let run_dir = out.join(stem);
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    // Made, never reused: a second merge into `out` in the same second (the same stem) finds
    // the run folder there and stops before writing, so neither merge's result is lost.
    std::fs::create_dir(&run_dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!(
                "{} already exists: another merge into {} wrote (or is writing) a run of the \
                 same second and revision; nothing was overwritten: merge again",
                run_dir.display(),
                out.display()
            )
        } else {
            format!("cannot create {}: {e}", run_dir.display())
        }
    })?;
    let mut text = header.to_string();
    text.push('\n');
    for l in lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    let jsonl = out.join(format!("{stem}.jsonl"));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&jsonl)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    written.map_err(|e| format!("cannot write {}: {e}", jsonl.display()))?;
    for j in jobs {
        let to = run_dir.join(&j.name);
        let from = j.dir.join(&j.stem);
        if from.is_dir() {
            copy_tree(&from, &to)?;
        }
        let console = j.dir.join("bench.out");
        if console.is_file() {
            std::fs::create_dir_all(&to)
                .map_err(|e| format!("cannot create {}: {e}", to.display()))?;
            std::fs::copy(&console, to.join("bench.out"))
                .map_err(|e| format!("cannot copy {}: {e}", console.display()))?;
        }
    }
    Ok((jsonl, run_dir))
}
