//! Input handling (docs/surface.md §2): BOM, strict UTF-8, NUL, line numbers,
//! and the limits CPython's tokenizer and AST construction enforce that ruff
//! does not (bracket nesting, indentation depth, syntax-tree depth).

use ruff_python_ast::token::TokenKind;
use ruff_python_ast::visitor::source_order::{self, SourceOrderVisitor, TraversalSignal};
use ruff_python_ast::{
    AnyNodeRef, ConversionFlag, InterpolatedElement, InterpolatedStringElement, ModModule,
    PythonVersion, Stmt,
};
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextSize};

/// CPython's tokenizer refuses more than this many open brackets (`MAXLEVEL`).
pub(crate) const MAX_BRACKETS: usize = 200;
/// CPython's tokenizer refuses this many indentation levels (`MAXINDENT`).
pub(crate) const MAX_INDENT: usize = 100;
/// Deepest syntax tree accepted. CPython builds its Python-level AST recursively
/// and fails past 3 × (recursion limit − the caller's stack depth) levels,
/// about 2,900 on 3.11 under pytest, so its exact limit moves with the call
/// site; this fixed limit just below it keeps the native side deterministic and
/// its stack use bounded (docs/surface.md §11).
pub(crate) const MAX_TREE_DEPTH: usize = 2_800;

/// Why the input was refused before or after parsing, with a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The message, without the path.
    pub message: String,
    /// 1-based line.
    pub line: u32,
}

impl Refusal {
    fn new(message: impl Into<String>, line: u32) -> Self {
        Self {
            message: message.into(),
            line,
        }
    }
}

/// The 1-based line of a byte offset: `\r\n`, `\n` and a lone `\r` each end a line.
pub(crate) fn line_at(data: &[u8], offset: usize) -> u32 {
    let head = &data[..offset.min(data.len())];
    let mut line: u32 = 1;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'\n' => line = line.saturating_add(1),
            b'\r' => {
                // `\r\n` at the edge of `head` still counts once, as Python's
                // count("\n") + count("\r") - count("\r\n") does.
                if head.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                line = line.saturating_add(1);
            }
            _ => {}
        }
        i += 1;
    }
    line
}

/// Line starts of a text, for turning parser offsets into 1-based lines.
#[derive(Debug)]
pub(crate) struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    /// Indexes `text`; a line ends at `\r\n`, `\n` or a lone `\r`.
    pub(crate) fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = vec![0u32];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => starts.push(offset_u32(i + 1)),
                b'\r' => {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    starts.push(offset_u32(i + 1));
                }
                _ => {}
            }
            i += 1;
        }
        Self { starts }
    }

    /// The 1-based line holding `offset`.
    pub(crate) fn line(&self, offset: TextSize) -> u32 {
        let offset = offset.to_u32();
        let index = self.starts.partition_point(|&start| start <= offset);
        u32::try_from(index.max(1)).unwrap_or(u32::MAX)
    }
}

fn offset_u32(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

/// Drops one BOM and decodes strict UTF-8, refusing invalid bytes and NUL.
pub(crate) fn decode(source: &[u8]) -> Result<&str, Refusal> {
    let source = source.strip_prefix(b"\xef\xbb\xbf").unwrap_or(source);
    let text = std::str::from_utf8(source)
        .map_err(|e| Refusal::new("is not valid UTF-8", line_at(source, e.valid_up_to())))?;
    // ruff's lexer skips a second BOM; CPython refuses it as a character.
    if text.starts_with('\u{feff}') {
        return Err(Refusal::new(
            "does not parse as Python: invalid non-printable character U+FEFF",
            1,
        ));
    }
    if let Some(nul) = text.find('\0') {
        return Err(Refusal::new(
            "does not parse as Python: source contains a null byte",
            line_at(source, nul),
        ));
    }
    Ok(text)
}

/// Applies CPython's tokenizer limits that ruff does not have: at most
/// [`MAX_BRACKETS`] open brackets and fewer than [`MAX_INDENT`] indentation levels.
pub(crate) fn check_token_limits(
    parsed: &Parsed<ModModule>,
    lines: &LineIndex,
) -> Result<(), Refusal> {
    let mut brackets = 0usize;
    let mut indent = 0usize;
    for token in parsed.tokens() {
        match token.kind() {
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                brackets += 1;
                if brackets > MAX_BRACKETS {
                    return Err(Refusal::new(
                        "does not parse as Python: too many nested parentheses",
                        lines.line(token.start()),
                    ));
                }
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => {
                brackets = brackets.saturating_sub(1);
            }
            TokenKind::Indent => {
                indent += 1;
                if indent >= MAX_INDENT {
                    return Err(Refusal::new(
                        "does not parse as Python: too many levels of indentation",
                        lines.line(token.end()),
                    ));
                }
            }
            TokenKind::Dedent => indent = indent.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// What one pass over the syntax tree found.
#[derive(Debug)]
pub(crate) struct TreeScan {
    /// The tree nests deeper than [`MAX_TREE_DEPTH`] (counting an `elif` as one
    /// level below the `if` before it, as CPython's tree nests it).
    pub too_deep: bool,
    /// The first f-string CPython would refuse (see [`scan_tree`]).
    pub fstring: Option<Refusal>,
}

/// Walks the tree once, measuring its depth and applying CPython's f-string
/// rules that ruff does not check: a field inside a format spec inside a format
/// spec is "nested too deeply", a field cannot be a bare starred expression,
/// and before Python 3.12 a conversion (`!r`) must be followed directly by `:`
/// or `}`. Recursion stops at the depth limit, so this never needs more stack
/// than an accepted tree does.
pub(crate) fn scan_tree(
    module: &ModModule,
    text: &str,
    target: PythonVersion,
    lines: &LineIndex,
) -> TreeScan {
    let mut scanner = Scanner {
        depth: 0,
        too_deep: false,
        text,
        strict_conversion: target < PythonVersion::PY312,
        lines,
        fstring: None,
    };
    scanner.visit_body(&module.body);
    TreeScan {
        too_deep: scanner.too_deep,
        fstring: scanner.fstring,
    }
}

struct Scanner<'t> {
    depth: usize,
    too_deep: bool,
    text: &'t str,
    strict_conversion: bool,
    lines: &'t LineIndex,
    fstring: Option<Refusal>,
}

impl Scanner<'_> {
    fn check_fstring(&mut self, elements: &[InterpolatedStringElement], level: usize) {
        for element in elements {
            let InterpolatedStringElement::Interpolation(field) = element else {
                continue;
            };
            let reason = if level >= 2 {
                Some("f-string: expressions nested too deeply")
            } else if field.expression.is_starred_expr() {
                Some("f-string: cannot use starred expression here")
            } else if self.strict_conversion && !self.conversion_is_closed(field) {
                Some("f-string: expecting '}'")
            } else {
                None
            };
            if let Some(reason) = reason {
                self.fstring.get_or_insert_with(|| {
                    Refusal::new(
                        format!("does not parse as Python: {reason}"),
                        self.lines.line(field.start()),
                    )
                });
                return;
            }
            if let Some(spec) = &field.format_spec {
                self.check_fstring(&spec.elements, level + 1);
            }
        }
    }

    /// Whether a conversion, if any, is directly followed by `:` or `}`.
    fn conversion_is_closed(&self, field: &InterpolatedElement) -> bool {
        if field.conversion == ConversionFlag::None {
            return true;
        }
        let close = match &field.format_spec {
            Some(spec) => spec.start().to_usize().saturating_sub(1),
            None => field.end().to_usize().saturating_sub(1),
        };
        let bytes = self.text.as_bytes();
        close >= 2
            && matches!(bytes.get(close), Some(b':' | b'}'))
            && matches!(bytes.get(close - 1), Some(b'r' | b's' | b'a'))
            && bytes.get(close - 2) == Some(&b'!')
    }
}

impl<'a> SourceOrderVisitor<'a> for Scanner<'_> {
    fn enter_node(&mut self, node: AnyNodeRef<'a>) -> TraversalSignal {
        self.depth += 1;
        if self.too_deep || self.depth > MAX_TREE_DEPTH {
            self.too_deep = true;
            return TraversalSignal::Skip;
        }
        if let AnyNodeRef::FString(f) = node {
            if self.fstring.is_none() {
                self.check_fstring(&f.elements, 0);
            }
        }
        TraversalSignal::Traverse
    }

    fn leave_node(&mut self, _node: AnyNodeRef<'a>) {
        self.depth -= 1;
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let Stmt::If(node) = stmt else {
            source_order::walk_stmt(self, stmt);
            return;
        };
        // ruff keeps `elif` clauses in a flat list; CPython nests each one in the
        // previous clause's `orelse`, one level deeper.
        let extra = node.elif_else_clauses.len();
        self.depth += extra;
        source_order::walk_stmt(self, stmt);
        self.depth -= extra;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_parser::parse_module;

    type TestResult = Result<(), String>;

    fn parse(text: &str) -> Result<Parsed<ModModule>, String> {
        parse_module(text).map_err(|e| e.to_string())
    }

    #[test]
    fn lines_count_crlf_lf_and_lone_cr() -> TestResult {
        let data = b"a\r\nb\nc\rd";
        let lines = LineIndex::new(std::str::from_utf8(data).map_err(|e| e.to_string())?);
        for (offset, want) in [(0, 1), (3, 2), (5, 3), (7, 4)] {
            let got = lines.line(TextSize::new(offset));
            let direct = line_at(data, offset as usize);
            if got != want || direct != want {
                return Err(format!("offset {offset}: {got} / {direct}, want {want}"));
            }
        }
        Ok(())
    }

    #[test]
    fn invalid_utf8_names_the_line_of_the_first_bad_byte() -> TestResult {
        let refusal = decode(b"x = 1\r\ny = 2\rz = '\xff'\n")
            .err()
            .ok_or("accepted")?;
        if refusal == Refusal::new("is not valid UTF-8", 3) {
            Ok(())
        } else {
            Err(format!("{refusal:?}"))
        }
    }

    #[test]
    fn a_bom_is_dropped_and_nul_is_refused() -> TestResult {
        if decode(b"\xef\xbb\xbfx = 1\n") != Ok("x = 1\n") {
            return Err("BOM not dropped".into());
        }
        let refusal = decode(b"x = 1\ny = 2\0\n").err().ok_or("accepted")?;
        if refusal.line == 2 && refusal.message.contains("null byte") {
            Ok(())
        } else {
            Err(format!("{refusal:?}"))
        }
    }

    #[test]
    fn bracket_and_indentation_limits_match_cpython() -> TestResult {
        let ok = format!("x = {}1{}\n", "(".repeat(200), ")".repeat(200));
        let deep = format!("x = {}1{}\n", "(".repeat(201), ")".repeat(201));
        let parsed = parse(&ok)?;
        check_token_limits(&parsed, &LineIndex::new(&ok)).map_err(|r| r.message)?;
        let parsed = parse(&deep)?;
        if check_token_limits(&parsed, &LineIndex::new(&deep)).is_ok() {
            return Err("201 brackets accepted".into());
        }
        let nested = |n: usize| {
            let mut s: String = (0..n)
                .map(|i| format!("{}if x:\n", " ".repeat(i)))
                .collect();
            s.push_str(&" ".repeat(n));
            s.push_str("pass\n");
            s
        };
        let text = nested(99);
        check_token_limits(&parse(&text)?, &LineIndex::new(&text)).map_err(|r| r.message)?;
        let text = nested(100);
        match check_token_limits(&parse(&text)?, &LineIndex::new(&text)) {
            Err(refusal) if refusal.line == 101 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    }

    fn too_deep(module: &ModModule) -> bool {
        scan_tree(module, "", PythonVersion::PY311, &LineIndex::new("")).too_deep
    }

    #[test]
    fn the_tree_depth_limit_counts_elif_chains() -> TestResult {
        if too_deep(parse("x = -(-(-1))\n")?.syntax()) {
            return Err("shallow tree refused".into());
        }
        let chain = format!("x = {}1\n", "-".repeat(MAX_TREE_DEPTH + 10));
        if !too_deep(parse(&chain)?.syntax()) {
            return Err("deep chain accepted".into());
        }
        let mut elifs = String::from("if a:\n    pass\n");
        for _ in 0..MAX_TREE_DEPTH {
            elifs.push_str("elif a:\n    pass\n");
        }
        if too_deep(parse(&elifs)?.syntax()) {
            Ok(())
        } else {
            Err("deep elif chain accepted".into())
        }
    }
}
