//! A PTX module read as far as instrumenting it needs: its header directives, its kernels
//! (`.entry`), and each kernel body as a list of statements with their byte ranges.
//!
//! Nothing is rewritten here: the rewriter inserts text at statement boundaries and
//! replaces branch targets by range, so everything it does not touch stays byte-identical.
//! The reading follows the PTX ISA's lexical rules (statements end at `;`, `{` `}` open and
//! close scopes, a label is an identifier followed by `:`, `//` and `/* */` comments,
//! string literals in `.pragma`), and refuses what it does not understand with the line.

use std::ops::Range;

use super::InstrumentError;

/// One statement of a kernel body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stmt {
    /// `name:`
    Label(String),
    /// An instruction: its guard predicate (`@%p`, `@!%p`), opcode with modifiers
    /// (`bra.uni`) and operands (the text after the opcode, without the `;`).
    Instr {
        guard: Option<String>,
        opcode: String,
        operands: String,
        /// Byte range of the operands in the module text.
        operands_at: Range<usize>,
    },
    /// A directive (`.reg`, `.loc`, `.pragma`, ...): its name and the rest.
    Directive { name: String, rest: String },
    /// `{`: a nested scope opens.
    Open,
    /// `}`: a nested scope closes.
    Close,
}

/// A statement and where it stands in the module text.
#[derive(Clone, Debug)]
pub(crate) struct Located {
    pub stmt: Stmt,
    /// Byte range, from the statement's first character to just after its `;` (or `:`,
    /// `{`, `}`).
    pub at: Range<usize>,
    /// 1-based line of its first character.
    pub line: usize,
}

impl Located {
    /// The opcode's base name (`bra` of `bra.uni`), for instructions.
    pub fn op(&self) -> Option<&str> {
        match &self.stmt {
            Stmt::Instr { opcode, .. } => Some(opcode.split('.').next().unwrap_or("")),
            _ => None,
        }
    }
}

/// One `.entry` of the module.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    pub name: String,
    /// The parameter list, as written between `(` and `)`.
    pub params: Range<usize>,
    /// Threads per block from `.reqntid` or `.maxntid` (product of the dimensions), if set.
    pub threads_per_block: Option<u32>,
    /// Byte offset of the `{` that opens the body, and just after the `}` closing it.
    pub body: Range<usize>,
    pub stmts: Vec<Located>,
}

/// A PTX module: where its header ends, its `.target`, its `.file` table, its kernels.
#[derive(Clone, Debug)]
pub(crate) struct Module {
    /// `.target` operands (`sm_90a`, `sm_80, debug`).
    pub target: String,
    /// `.version` as (major, minor): the PTX ISA the module is written in.
    pub version: (u32, u32),
    /// Byte offset just after the module's header directives (`.version`, `.target`,
    /// `.address_size`): where module-scope declarations may go.
    pub header_end: usize,
    /// `.file` entries: (number, path).
    pub files: Vec<(u32, String)>,
    pub kernels: Vec<Kernel>,
}

/// Directives written without a closing `;`: they end with their line.
const LINE_DIRECTIVES: [&str; 5] = [".loc", ".file", ".version", ".target", ".address_size"];

/// Lexer over the module text that yields statements with byte ranges.
struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

fn refuse(text: &str, at: usize, why: impl Into<String>) -> InstrumentError {
    InstrumentError::Unsupported {
        line: line_of(text, at),
        reason: why.into(),
    }
}

/// 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl<'a> Lexer<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips white space and comments.
    fn skip_blank(&mut self) -> Result<(), InstrumentError> {
        let b = self.bytes();
        while self.pos < b.len() {
            match b[self.pos] {
                c if c.is_ascii_whitespace() => self.pos += 1,
                b'/' if b.get(self.pos + 1) == Some(&b'/') => {
                    while self.pos < b.len() && b[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if b.get(self.pos + 1) == Some(&b'*') => {
                    let start = self.pos;
                    match self.text[self.pos + 2..].find("*/") {
                        Some(end) => self.pos += 2 + end + 2,
                        None => return Err(refuse(self.text, start, "unterminated /* comment")),
                    }
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// The next statement-level unit from here: `{`, `}`, a label or a statement up to its
    /// `;` (comments and strings inside skipped). `None` at the end of the text.
    fn next_unit(&mut self) -> Result<Option<Range<usize>>, InstrumentError> {
        self.skip_blank()?;
        let b = self.bytes();
        let start = self.pos;
        if start >= b.len() {
            return Ok(None);
        }
        if b[start] == b'{' || b[start] == b'}' {
            self.pos += 1;
            return Ok(Some(start..self.pos));
        }
        // A label: an identifier directly followed by ':'.
        let ident_end = start
            + b[start..]
                .iter()
                .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'%')
                .count();
        if ident_end > start && b.get(ident_end) == Some(&b':') {
            self.pos = ident_end + 1;
            return Ok(Some(start..self.pos));
        }
        // Directives that end at the end of their line, without ';'.
        let rest = &self.text[start..];
        if LINE_DIRECTIVES.iter().any(|d| {
            rest.starts_with(d) && rest[d.len()..].starts_with(|c: char| c.is_whitespace())
        }) {
            let end = start + rest.find('\n').unwrap_or(rest.len());
            self.pos = end;
            return Ok(Some(start..self.text[..end].trim_end().len()));
        }
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b';' => {
                    self.pos = i + 1;
                    return Ok(Some(start..self.pos));
                }
                b'"' | b'/' if let Some(end) = skip_literal(b, i) => {
                    i = end;
                    continue;
                }
                // An instruction's braces are vector operands (`{%r1, %r2}`); a
                // directive running into a brace opens a scope (`.entry f() {`,
                // `.section .debug_info {`, `= {1, 2}`): the caller reads that.
                b'{' | b'}' if b[start] == b'.' => {
                    self.pos = i;
                    return Ok(Some(start..i));
                }
                _ => {}
            }
            i += 1;
        }
        Err(refuse(self.text, start, "statement without a closing ';'"))
    }
}

/// Reads one statement's text (range `at`, ending in `;` or `:` or a brace).
fn classify(text: &str, at: Range<usize>) -> Result<Stmt, InstrumentError> {
    let s = &text[at.clone()];
    if s == "{" {
        return Ok(Stmt::Open);
    }
    if s == "}" {
        return Ok(Stmt::Close);
    }
    if let Some(label) = s.strip_suffix(':') {
        return Ok(Stmt::Label(label.to_string()));
    }
    let body = s.strip_suffix(';').unwrap_or(s).trim_end();
    if let Some(rest) = body.strip_prefix('.') {
        let name_len = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        return Ok(Stmt::Directive {
            name: rest[..name_len].to_string(),
            rest: rest[name_len..].trim().to_string(),
        });
    }
    let mut cursor = 0;
    let mut guard = None;
    if body.starts_with('@') {
        let end = body.find(char::is_whitespace).ok_or_else(|| {
            refuse(
                text,
                at.start,
                format!("guard without an instruction: `{body}`"),
            )
        })?;
        guard = Some(body[1..end].to_string());
        cursor = end;
    }
    let after_guard = &body[cursor..];
    let lead = after_guard.len() - after_guard.trim_start().len();
    cursor += lead;
    let op_len = body[cursor..]
        .find(char::is_whitespace)
        .unwrap_or(body.len() - cursor);
    let opcode = body[cursor..cursor + op_len].to_string();
    if opcode.is_empty() || !opcode.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(refuse(
            text,
            at.start,
            format!("not an instruction: `{body}`"),
        ));
    }
    let operands_start = cursor + op_len;
    let rest = &body[operands_start..];
    let lead = rest.len() - rest.trim_start().len();
    let operands_at = at.start + operands_start + lead..at.start + body.len();
    Ok(Stmt::Instr {
        guard,
        opcode,
        operands: text[operands_at.clone()].to_string(),
        operands_at,
    })
}

/// Finds the `)` matching the `(` at `open`.
fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Threads per block from a `.reqntid` / `.maxntid` directive's operands (`128, 1, 1`).
fn threads_of(dims: &str) -> Option<u32> {
    dims.split(',')
        .map(|d| d.trim().parse::<u32>().ok())
        .try_fold(1u32, |acc, d| acc.checked_mul(d?))
}

impl Module {
    /// Reads a module; refuses text that is not PTX or that ikp cannot read safely.
    pub fn parse(text: &str) -> Result<Module, InstrumentError> {
        if !text.contains(".version") || !text.contains(".target") {
            return Err(InstrumentError::NotPtx);
        }
        let mut lx = Lexer { text, pos: 0 };
        let mut target = None;
        let mut header_end = 0;
        let mut files = Vec::new();
        let mut kernels = Vec::new();
        let mut version = None;
        while let Some(at) = lx.next_unit()? {
            let unit = &text[at.clone()];
            let words: Vec<&str> = unit.split_whitespace().collect();
            let first = words.first().copied().unwrap_or("");
            match first {
                ".version" => {
                    version = words.get(1).and_then(|v| {
                        let (major, minor) = v.split_once('.')?;
                        Some((major.parse().ok()?, minor.parse().ok()?))
                    });
                    header_end = line_end(text, at.start);
                }
                ".target" => {
                    target = Some(unit[".target".len()..].trim().to_string());
                    header_end = line_end(text, at.start);
                }
                ".address_size" => header_end = line_end(text, at.start),
                ".file" => files.extend(parse_file(unit)),
                "{" => {
                    // A module-level scope (a `.section` body, or a `.func` body read
                    // after its header): skip to its close.
                    lx.pos = skip_scope(text, at.start)?;
                }
                _ if unit.contains(".entry") => {
                    kernels.push(read_kernel(text, at.start, &mut lx)?);
                }
                _ if unit.contains(".func") => {
                    // A device function: left as it is; its body is skipped.
                    let open = text[at.start..]
                        .find('{')
                        .map(|o| at.start + o)
                        .filter(|&o| !text[at.start..o].contains(';'));
                    if let Some(open) = open {
                        lx.pos = skip_scope(text, open)?;
                    }
                }
                _ => {}
            }
        }
        let version = version.ok_or(InstrumentError::NotPtx)?;
        let target = target.ok_or(InstrumentError::NotPtx)?;
        Ok(Module {
            target,
            version,
            header_end,
            files,
            kernels,
        })
    }

    /// The file name of `.file` number `n` (its last path component).
    pub fn file_name(&self, n: u32) -> Option<&str> {
        self.files
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, p)| p.rsplit('/').next().unwrap_or(p))
    }

    /// The full path of `.file` number `n`.
    pub fn file_path(&self, n: u32) -> Option<&str> {
        self.files
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, p)| p.as_str())
    }
}

fn line_end(text: &str, from: usize) -> usize {
    text[from..]
        .find('\n')
        .map(|i| from + i + 1)
        .unwrap_or(text.len())
}

/// `.file 1 "/path/a.py"` (optionally followed by a timestamp and size) → (1, path).
fn parse_file(line: &str) -> Option<(u32, String)> {
    let rest = line.trim().strip_prefix(".file")?.trim_start();
    let (n, rest) = rest.split_once(char::is_whitespace)?;
    let rest = rest.trim_start().strip_prefix('"')?;
    let path = &rest[..rest.find('"')?];
    Some((n.parse().ok()?, path.to_string()))
}

/// Where a string literal (`"..."`, through its closing quote) or a `//` comment (to its
/// line's end) that starts at `i` ends; `None` when neither starts there.
fn skip_literal(b: &[u8], i: usize) -> Option<usize> {
    let (close, from) = match (b[i], b.get(i + 1)) {
        (b'"', _) => (b'"', i + 1),
        (b'/', Some(b'/')) => (b'\n', i + 2),
        _ => return None,
    };
    let end = b[from..]
        .iter()
        .position(|&c| c == close)
        .map_or(b.len(), |p| from + p);
    Some(if close == b'"' {
        (end + 1).min(b.len())
    } else {
        end
    })
}

/// Offset just after the `}` matching the `{` at `open` (strings and comments skipped).
fn skip_scope(text: &str, open: usize) -> Result<usize, InstrumentError> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            b'"' | b'/' if let Some(end) = skip_literal(b, i) => {
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Err(refuse(text, open, "scope without a closing '}'"))
}

/// Reads an `.entry` from `start` (its first directive word) through its body.
fn read_kernel(text: &str, start: usize, lx: &mut Lexer) -> Result<Kernel, InstrumentError> {
    let entry = start + text[start..].find(".entry").expect("caller saw .entry");
    let after = entry + ".entry".len();
    let open_paren = text[after..]
        .find(['(', '{', ';'])
        .map(|i| after + i)
        .filter(|&i| text.as_bytes()[i] == b'(');
    let name_end =
        open_paren.unwrap_or_else(|| after + text[after..].find(['{', ';']).unwrap_or(0));
    let name = text[after..name_end].trim().to_string();
    if name.is_empty() {
        return Err(refuse(text, entry, ".entry without a name"));
    }
    let (params, after_params) = match open_paren {
        Some(p) => {
            let close = matching_paren(text, p)
                .ok_or_else(|| refuse(text, p, "parameter list without a closing ')'"))?;
            (p + 1..close, close + 1)
        }
        None => (name_end..name_end, name_end),
    };
    let open = text[after_params..]
        .find(['{', ';'])
        .map(|i| after_params + i)
        .ok_or_else(|| refuse(text, entry, "kernel without a body"))?;
    if text.as_bytes()[open] == b';' {
        return Err(refuse(
            text,
            entry,
            format!("kernel {name} is only declared here (no body)"),
        ));
    }
    let perf = &text[after_params..open];
    let mut threads_per_block = None;
    for directive in [".reqntid", ".maxntid"] {
        if let Some(i) = perf.find(directive) {
            let rest = &perf[i + directive.len()..];
            let end = rest.find('.').unwrap_or(rest.len());
            threads_per_block = threads_per_block.or(threads_of(rest[..end].trim()));
        }
    }
    let close = skip_scope(text, open)?;
    lx.pos = open + 1;
    let mut stmts = Vec::new();
    let mut depth = 1usize;
    // Lines counted as the statements come, not from the start each time.
    let (mut line, mut counted) = (line_of(text, lx.pos), lx.pos);
    while let Some(at) = lx.next_unit()? {
        let stmt = classify(text, at.clone())?;
        match stmt {
            Stmt::Open => depth += 1,
            Stmt::Close => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        line += text.as_bytes()[counted..at.start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        counted = at.start;
        stmts.push(Located { stmt, at, line });
    }
    lx.pos = close;
    Ok(Kernel {
        name,
        params,
        threads_per_block,
        body: open..close,
        stmts,
    })
}

/// The `.loc` position of a directive's operands (`1 27 24`, maybe followed by
/// `, function_name ..., inlined_at ...`): (file, line).
pub(crate) fn loc_of(rest: &str) -> Option<(u32, u32)> {
    let mut it = rest
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty());
    let file = it.next()?.parse().ok()?;
    let line = it.next()?.parse().ok()?;
    Some((file, line))
}

/// Branch target label of a `bra` instruction's operands (`$L__BB0_2`), with its byte
/// range in the module text. `None` for anything else (`brx.idx` tables).
pub(crate) fn branch_target(
    operands: &str,
    operands_at: &Range<usize>,
) -> Option<(String, Range<usize>)> {
    let t = operands.trim();
    if t.is_empty() || t.contains(',') || t.contains('[') {
        return None;
    }
    let lead = operands.len() - operands.trim_start().len();
    let start = operands_at.start + lead;
    Some((t.to_string(), start..start + t.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
//
// Generated by hand
//
.version 8.0
.target sm_80
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
.maxntid 128, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.loc	1 10 3
	mov.u32 	%r1, 0;
$L__BB0_1:
	add.s32 	%r1, %r1, 1;
	setp.lt.u32 	%p1, %r1, 8;
	@%p1 bra 	$L__BB0_1;
	{ .reg .b32 %t; mov.u32 %t, 1; }
	ret;
}
	.file	1 "/src/dir/k.py"
	.section	.debug_str
	{
$L__info_string0:
	.b8 107
	}
"#;

    #[test]
    fn reads_a_kernel_its_statements_and_the_file_table() {
        let m = Module::parse(SMALL).unwrap();
        assert_eq!(m.target, "sm_80");
        assert_eq!(m.files, vec![(1, "/src/dir/k.py".to_string())]);
        assert_eq!(m.file_name(1), Some("k.py"));
        assert_eq!(m.kernels.len(), 1);
        let k = &m.kernels[0];
        assert_eq!(k.name, "k");
        assert_eq!(k.threads_per_block, Some(128));
        assert!(SMALL[k.params.clone()].contains("k_param_1"));
        let ops: Vec<_> = k.stmts.iter().filter_map(|s| s.op()).collect();
        assert_eq!(ops, ["mov", "add", "setp", "bra", "mov", "ret"]);
        let labels: Vec<_> = k
            .stmts
            .iter()
            .filter_map(|s| match &s.stmt {
                Stmt::Label(l) => Some(l.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(labels, ["$L__BB0_1"]);
        let bra = k.stmts.iter().find(|s| s.op() == Some("bra")).unwrap();
        match &bra.stmt {
            Stmt::Instr {
                guard,
                operands,
                operands_at,
                ..
            } => {
                assert_eq!(guard.as_deref(), Some("%p1"));
                let (t, at) = branch_target(operands, operands_at).unwrap();
                assert_eq!(t, "$L__BB0_1");
                assert_eq!(&SMALL[at], "$L__BB0_1");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(&SMALL[bra.at.clone()], "@%p1 bra \t$L__BB0_1;");
        assert_eq!(bra.line, 22);
    }

    #[test]
    fn refuses_what_is_not_ptx_and_unterminated_statements() {
        assert!(matches!(
            Module::parse("hello"),
            Err(InstrumentError::NotPtx)
        ));
        let cut = SMALL.replace("ret;\n}", "ret");
        let err = Module::parse(&cut).unwrap_err();
        assert!(err.to_string().contains("line"), "{err}");
    }

    #[test]
    fn loc_reads_plain_and_inlined_forms() {
        assert_eq!(loc_of("1 27 24"), Some((1, 27)));
        assert_eq!(
            loc_of("2 40 0, function_name $L__info_string0, inlined_at 1 5 6"),
            Some((2, 40))
        );
    }
}
