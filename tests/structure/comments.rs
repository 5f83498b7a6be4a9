//! Comments explain the code as it is, not the tracker's history: no comment names an issue
//! by number (the closing notes and the git log hold that history).

use super::seams::rust_files;
use std::fs;

/// Whether `comment` names an issue by number (the word, then a number, `#` allowed).
fn names_an_issue(comment: &str) -> bool {
    let lower = comment.to_ascii_lowercase();
    let mut rest = lower.as_str();
    while let Some(i) = rest.find("issue") {
        let after = rest[i + "issue".len()..].trim_start_matches('s');
        let after = after.strip_prefix(' ').unwrap_or(after);
        let after = after.strip_prefix('#').unwrap_or(after);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return true;
        }
        rest = &rest[i + "issue".len()..];
    }
    false
}

#[test]
fn no_comment_names_an_issue_by_number() {
    let repo = super::repo();
    let mut found = Vec::new();
    for dir in [
        "boot/src",
        "kernel/src",
        "kernel/algo/src",
        "trace/src",
        "tests",
    ] {
        // This file's own examples aside.
        for p in rust_files(&repo.join(dir))
            .into_iter()
            .filter(|p| !p.ends_with("structure/comments.rs"))
        {
            let text = fs::read_to_string(&p).unwrap();
            for (n, line) in text.lines().enumerate() {
                if let Some(at) = line.find("//") {
                    if names_an_issue(&line[at..]) {
                        found.push(format!("{}:{}: {}", p.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "comments naming an issue:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_issue_check_can_fail() {
    assert!(names_an_issue("// fixed in issue 14 bug 3"));
    assert!(names_an_issue("/// Issues 24, 37: ..."));
    assert!(names_an_issue("// see issue #47"));
    assert!(!names_an_issue("// an issue of ordering, 14 times"));
}
