//! The fenced code blocks of a Markdown page, and what each one's info string asks for.
//!
//! The info string's first word is the language; the words after it are tags:
//! `sh` (run), `sh gpu` (needs a GPU: syntax and flags only), `sh setup` (installs, or is
//! the test command itself: syntax and the paths it names), `python` / `python gpu`,
//! `rust` / `rust no_run` (doctests of the root crate), `cuda NAME` / `cpp NAME` (written
//! to the file NAME in the page's directory and compiled). A fence without a language, or
//! with one no rule covers, is an error: a new kind of block needs a rule here first.

use std::fmt;

/// One fenced block: where it is, its info string split, and its text.
#[derive(Debug, Clone)]
pub struct Block {
    /// 1-based line of the opening fence.
    pub line: usize,
    pub lang: String,
    pub tags: Vec<String>,
    pub code: String,
}

impl Block {
    pub fn has(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// The file a `cuda` / `cpp` block is written to: its tag.
    pub fn file(&self) -> Option<&str> {
        self.tags.first().map(String::as_str)
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ```{}", self.line, self.lang)?;
        for t in &self.tags {
            write!(f, " {t}")?;
        }
        Ok(())
    }
}

/// The languages and the tags each may carry (`NAME`: one file name, `k.cu`).
const RULES: &[(&str, &[&str])] = &[
    ("sh", &["gpu", "setup"]),
    ("python", &["gpu"]),
    ("rust", &["no_run"]),
    ("cuda", &["NAME"]),
    ("cpp", &["NAME"]),
];

fn is_name(tag: &str) -> bool {
    tag.contains('.')
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The blocks of `md` in order; an unclosed fence, a fence without a language, an unknown
/// language or tag, or a `cuda` / `cpp` block without one file name is an error naming its line.
pub fn blocks(md: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut lines = md.lines().enumerate();
    while let Some((i, l)) = lines.next() {
        let t = l.trim_start();
        let Some(info) = t.strip_prefix("```") else {
            continue;
        };
        let indent = l.len() - t.len();
        let mut words = info.split_whitespace();
        let lang = words
            .next()
            .ok_or(format!("line {}: a fence without a language", i + 1))?;
        let tags: Vec<String> = words.map(str::to_owned).collect();
        let allowed = RULES
            .iter()
            .find(|(l, _)| *l == lang)
            .ok_or(format!("line {}: no rule for ```{lang} blocks", i + 1))?
            .1;
        for tag in &tags {
            if !allowed
                .iter()
                .any(|a| tag == a || (*a == "NAME" && is_name(tag)))
            {
                return Err(format!("line {}: ```{lang} takes no tag {tag}", i + 1));
            }
        }
        let mut code = String::new();
        let mut closed = false;
        for (_, c) in lines.by_ref() {
            if c.trim() == "```" {
                closed = true;
                break;
            }
            // Indented fences (in a list item) indent their lines as much.
            let cut = c.len() - c.trim_start().len();
            code.push_str(&c[cut.min(indent)..]);
            code.push('\n');
        }
        if !closed {
            return Err(format!("line {}: the fence is never closed", i + 1));
        }
        let b = Block {
            line: i + 1,
            lang: lang.to_owned(),
            tags,
            code,
        };
        if matches!(lang, "cuda" | "cpp") && b.tags.len() != 1 {
            return Err(format!("{b}: needs one file NAME (where it is written)"));
        }
        out.push(b);
    }
    Ok(out)
}

/// The shell's logical lines of `code`: `\`-continued lines joined, comments and blank
/// lines dropped.
pub fn shell_lines(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in code.lines() {
        if let Some(head) = l.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
            continue;
        }
        cur.push_str(l);
        let line = strip_comment(&cur).trim().to_owned();
        cur.clear();
        if !line.is_empty() {
            out.push(line);
        }
    }
    out
}

/// `line` up to a `#` that starts a comment (after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double, mut prev_space) = (false, false, true);
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev_space => return &line[..i],
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    line
}

/// The commands of `line` that run `ikp` (the set-up command's `cargo run -p ikp-cli --`
/// included), as words: `&&`, `;` and `|` separate commands. A word holding a shell
/// expansion or a quote is kept as written.
pub fn ikp_commands(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for cmd in line.split("&&").flat_map(|c| c.split(';')) {
        let cmd = cmd.split('|').next().unwrap_or("");
        let words: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
        let start = match words.iter().position(|w| w == "ikp") {
            Some(0) => 1,
            // `cargo run --release -p ikp-cli -- ARGS`, `for ...; do ikp ARGS`
            _ if words.first().is_some_and(|w| w == "cargo") => {
                match words.iter().position(|w| w == "--") {
                    Some(p) if words.iter().any(|w| w == "ikp-cli") => p + 1,
                    _ => continue,
                }
            }
            Some(p) if words[..p].last().is_some_and(|w| w == "do") => p + 1,
            _ => continue,
        };
        out.push(words[start..].to_vec());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_languages_tags_and_indented_blocks() {
        let md = "text\n```sh\nikp a\n```\n- item\n\n  ```python gpu\n  import x\n    y\n  ```\n```cuda k.cu\nint x;\n```\n";
        let b = blocks(md).unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(
            (b[0].line, b[0].lang.as_str(), b[0].code.as_str()),
            (2, "sh", "ikp a\n")
        );
        assert!(b[1].has("gpu"));
        assert_eq!(b[1].code, "import x\n  y\n");
        assert_eq!(b[2].file(), Some("k.cu"));
    }

    #[test]
    fn blocks_no_rule_covers_are_refused() {
        for (md, why) in [
            ("```\nx\n```\n", "without a language"),
            ("```toml\nx\n```\n", "no rule for ```toml"),
            ("```sh quick\nx\n```\n", "takes no tag quick"),
            ("```rust ignore\nx\n```\n", "takes no tag ignore"),
            ("```cuda\nx\n```\n", "needs one file NAME"),
            ("```cuda a.cu b.cu\nx\n```\n", "needs one file NAME"),
            ("```sh\nx\n", "never closed"),
        ] {
            let e = blocks(md).unwrap_err();
            assert!(e.contains(why), "{md:?}: {e}");
        }
    }

    #[test]
    fn shell_lines_and_the_ikp_commands_in_them() {
        let code = "ikp decode a.ikp \\\n  --perfetto o.trace   # a comment\n\n# only a comment\nfor r in 0 1; do ikp sample r$r.ikp; done\ncargo run --release -p ikp-cli -- summary a.ikp | head\nmkdir -p out && ikp header -o out; echo '# not a comment'\n";
        let lines = shell_lines(code);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(lines[0], "ikp decode a.ikp    --perfetto o.trace");
        let cmds: Vec<Vec<String>> = lines.iter().flat_map(|l| ikp_commands(l)).collect();
        let words: Vec<String> = cmds.iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            words,
            [
                "decode a.ikp --perfetto o.trace",
                "sample r$r.ikp",
                "summary a.ikp",
                "header -o out"
            ]
        );
        assert!(lines[3].ends_with("'# not a comment'"));
    }
}
