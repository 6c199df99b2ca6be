//! Relative links between the pages, and their `#anchors`, as GitHub renders them.

use std::path::Path;

use crate::util::repo;

/// The text of `md` outside fenced blocks.
fn prose(md: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for l in md.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(md: &str) -> Vec<String> {
    prose(md)
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// The targets of the `[text](target)` links of `md`'s prose.
fn targets(md: &str) -> Vec<String> {
    let text = prose(md);
    text.split("](")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .map(str::to_owned)
        .collect()
}

/// What is wrong with the relative links of `page` (relative to the checkout).
pub fn broken(page: &str) -> Vec<String> {
    let root = repo();
    let md = std::fs::read_to_string(root.join(page)).unwrap();
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    let mut errors = Vec::new();
    for t in targets(&md) {
        if t.contains("://") || t.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = t.split_once('#').unwrap_or((&t, ""));
        let target = if file.is_empty() {
            root.join(page)
        } else {
            root.join(dir).join(file)
        };
        if !target.exists() {
            errors.push(format!("{page}: link to {t}: no such file"));
            continue;
        }
        if !anchor.is_empty() {
            let text = std::fs::read_to_string(&target).unwrap_or_default();
            if !anchors(&text).iter().any(|a| a == anchor) {
                errors.push(format!("{page}: link to {t}: no heading with that anchor"));
            }
        }
    }
    errors
}

#[test]
fn slugs_as_github_makes_them() {
    assert_eq!(
        slug(" A CUDA C++ kernel with `ikp.cuh`"),
        "a-cuda-c-kernel-with-ikpcuh"
    );
    assert_eq!(
        slug("Stream mode: every record"),
        "stream-mode-every-record"
    );
    let md = "# T\n[a](x.md#b) [c](#t)\n```sh\n# not a heading [d](e)\n```\n";
    assert_eq!(targets(md), ["x.md#b", "#t"]);
    assert_eq!(anchors(md), ["t"]);
}
