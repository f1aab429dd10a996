//! Units and keys (docs/surface.md §3-4), the Rust twin of `_Extractor` and
//! `keyed_statements` in `python/oracle_gate/surface.py`.

use std::collections::{BTreeMap, HashMap, HashSet};

use ruff_python_ast::visitor::source_order::{SourceOrderVisitor, TraversalSignal};
use ruff_python_ast::{self as ast, AnyNodeRef, ExceptHandler, Expr, ExprContext, ModModule, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::printer::{strip_docstring, Def, Printer, LOCAL_MARK, MAX_DEPTH};
use super::source::{LineIndex, Refusal};

/// The `(key, text)` units of a parsed module, sorted by key.
pub(crate) fn extract(
    module: &ModModule,
    source: &str,
    lines: &LineIndex,
) -> Result<Vec<(String, String)>, Refusal> {
    let mut extractor = Extractor {
        source,
        lines,
        printer: Printer::new(source),
        too_deep: Vec::new(),
        out: BTreeMap::new(),
    };
    let body: Vec<&Stmt> = module.body.iter().collect();
    extractor.scope(&body, "");
    if let Some(&line) = extractor.too_deep.iter().min() {
        return Err(Refusal {
            message: format!("nests more than {MAX_DEPTH} levels deep"),
            line,
        });
    }
    Ok(extractor.out.into_iter().collect())
}

struct Extractor<'a> {
    source: &'a str,
    lines: &'a LineIndex,
    printer: Printer<'a>,
    too_deep: Vec<u32>,
    out: BTreeMap<String, String>,
}

impl<'a> Extractor<'a> {
    /// Each statement of a scope becomes a unit; a class's members follow the class.
    fn scope(&mut self, members: &[&'a Stmt], prefix: &str) {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for &stmt in members {
            let label = statement_label(stmt);
            let count = seen.entry(label.clone()).or_insert(0);
            *count += 1;
            let key = if *count > 1 {
                format!("{prefix}{label}#{count}")
            } else {
                format!("{prefix}{label}")
            };
            let text = self.unit(stmt);
            self.out.insert(key.clone(), text);
            if let Stmt::ClassDef(class) = stmt {
                let inner: Vec<&'a Stmt> = class
                    .body
                    .iter()
                    .filter(|s| matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)))
                    .collect();
                self.scope(&inner, &format!("{key}::"));
            }
        }
    }

    fn line_of(&self, offset: TextSize) -> u32 {
        self.lines.line(offset)
    }

    /// The line CPython gives a statement: a definition's is its `def`/`class`
    /// keyword's, not its first decorator's.
    fn stmt_line(&self, stmt: &'a Stmt) -> u32 {
        match stmt {
            Stmt::FunctionDef(f) => self.def_line(Def::Func(f)),
            Stmt::ClassDef(c) => self.def_line(Def::Class(c)),
            s => self.line_of(s.start()),
        }
    }

    fn def_line(&self, def: Def<'a>) -> u32 {
        let (name, is_async) = match def {
            Def::Func(f) => (&f.name, f.is_async),
            Def::Class(c) => (&c.name, false),
        };
        let keyword = keyword_before(self.source, name.start().to_usize());
        let start = if is_async {
            keyword_before(self.source, keyword)
        } else {
            keyword
        };
        self.line_of(TextSize::try_from(start).unwrap_or(name.start()))
    }

    /// Renders one line of a unit, recording its line when it nests too deeply.
    fn line(
        &mut self,
        line: u32,
        render: impl FnOnce(&mut Printer<'a>, &mut String) -> Result<(), super::printer::TooDeep>,
    ) -> String {
        let text = self.printer.frag(render);
        if paren_depth(&text) > MAX_DEPTH {
            self.too_deep.push(line);
        }
        text
    }

    fn unit(&mut self, stmt: &'a Stmt) -> String {
        let def = match stmt {
            Stmt::FunctionDef(f) => Def::Func(f),
            Stmt::ClassDef(c) => Def::Class(c),
            other => {
                let line = self.stmt_line(other);
                return self.line(line, |p, out| p.stmt(other, out));
            }
        };
        let mut lines: Vec<String> = Vec::new();
        for decorator in def.decorators() {
            let line = self.line_of(decorator.expression.start());
            let text = self.line(line, |p, out| p.expr(&decorator.expression, out));
            lines.push(format!("@ {text}"));
        }
        let head_line = self.def_line(def);
        lines.push(self.line(head_line, |p, out| p.head(def, out)));
        let body = strip_docstring(def.body());
        let Def::Func(func) = def else {
            for s in body
                .iter()
                .filter(|s| !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)))
            {
                lines.push(self.body_line(s, false));
            }
            return lines.join("\n");
        };
        self.printer.locals = local_names(func);
        for s in body {
            lines.push(self.body_line(s, true));
        }
        self.printer.locals.clear();
        number_locals(&lines.join("\n"))
    }

    fn body_line(&mut self, stmt: &'a Stmt, function: bool) -> String {
        let line = self.stmt_line(stmt);
        self.line(line, |p, out| p.in_scope(function, |p| p.stmt(stmt, out)))
    }
}

/// A statement's key before `#N`: its name, `=NAMES` it binds, or `<code>`.
fn statement_label(stmt: &Stmt) -> String {
    match stmt {
        Stmt::FunctionDef(f) => f.name.id.to_string(),
        Stmt::ClassDef(c) => c.name.id.to_string(),
        other => {
            let mut names: Vec<&str> = Vec::new();
            scope_bindings(other, &mut names);
            let mut seen = HashSet::new();
            names.retain(|n| seen.insert(*n));
            if names.is_empty() {
                "<code>".to_owned()
            } else {
                format!("={}", names.join(","))
            }
        }
    }
}

/// Names a module- or class-level statement binds in its scope, in order.
fn scope_bindings<'s>(stmt: &'s Stmt, out: &mut Vec<&'s str>) {
    match stmt {
        Stmt::Assign(a) => a.targets.iter().for_each(|t| target_names(t, out)),
        Stmt::AnnAssign(ast::StmtAnnAssign { target, .. })
        | Stmt::AugAssign(ast::StmtAugAssign { target, .. }) => {
            if let Expr::Name(n) = &**target {
                out.push(n.id.as_str());
            }
        }
        Stmt::Import(i) => i.names.iter().for_each(|a| out.push(alias_binds(a, false))),
        Stmt::ImportFrom(i) => i.names.iter().for_each(|a| out.push(alias_binds(a, true))),
        Stmt::FunctionDef(f) => out.push(f.name.id.as_str()),
        Stmt::ClassDef(c) => out.push(c.name.id.as_str()),
        other => {
            match other {
                Stmt::For(f) => target_names(&f.target, out),
                Stmt::With(w) => w
                    .items
                    .iter()
                    .filter_map(|item| item.optional_vars.as_deref())
                    .for_each(|v| target_names(v, out)),
                _ => {}
            }
            for block in nested_bodies(other) {
                block.iter().for_each(|s| scope_bindings(s, out));
            }
        }
    }
}

fn alias_binds(alias: &ast::Alias, from_import: bool) -> &str {
    match &alias.asname {
        Some(asname) => asname.id.as_str(),
        None if from_import => alias.name.id.as_str(),
        None => alias.name.id.as_str().split('.').next().unwrap_or_default(),
    }
}

/// The statement lists of a compound statement, in source order.
fn nested_bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::If(i) => std::iter::once(&i.body[..])
            .chain(i.elif_else_clauses.iter().map(|c| &c.body[..]))
            .collect(),
        Stmt::With(w) => vec![&w.body],
        Stmt::Match(m) => m.cases.iter().map(|c| &c.body[..]).collect(),
        Stmt::Try(t) => std::iter::once(&t.body[..])
            .chain(t.handlers.iter().map(|h| {
                let ExceptHandler::ExceptHandler(h) = h;
                &h.body[..]
            }))
            .chain([&t.orelse[..], &t.finalbody[..]])
            .collect(),
        _ => Vec::new(),
    }
}

fn target_names<'a>(target: &'a Expr, out: &mut Vec<&'a str>) {
    match target {
        Expr::Name(n) => out.push(n.id.as_str()),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| target_names(e, out)),
        Expr::List(l) => l.elts.iter().for_each(|e| target_names(e, out)),
        Expr::Starred(s) => target_names(&s.value, out),
        _ => {}
    }
}

/// The names a unit function's body renumbers (docs/surface.md §4.2): names
/// stored in the body, less parameters, `global`/`nonlocal` names, imported
/// names, nested definitions' names, handler and pattern captures, type
/// parameters and class attributes.
fn local_names(func: &ast::StmtFunctionDef) -> HashSet<&str> {
    let mut finder = Bindings::default();
    for param in func.parameters.iter() {
        finder.kept.insert(param.name().id.as_str());
    }
    finder.visit_body(&func.body);
    finder
        .stores
        .into_iter()
        .filter(|name| !finder.kept.contains(name))
        .collect()
}

#[derive(Default)]
struct Bindings<'a> {
    stores: HashSet<&'a str>,
    kept: HashSet<&'a str>,
}

impl<'a> SourceOrderVisitor<'a> for Bindings<'a> {
    fn enter_node(&mut self, node: AnyNodeRef<'a>) -> TraversalSignal {
        match node {
            AnyNodeRef::ExprName(n) if n.ctx != ExprContext::Load => {
                self.stores.insert(n.id.as_str());
            }
            AnyNodeRef::Parameter(p) => {
                self.kept.insert(p.name.id.as_str());
            }
            AnyNodeRef::StmtGlobal(g) => self.kept.extend(g.names.iter().map(|n| n.id.as_str())),
            AnyNodeRef::StmtNonlocal(g) => {
                self.kept.extend(g.names.iter().map(|n| n.id.as_str()));
            }
            AnyNodeRef::Alias(a) => {
                self.kept.insert(alias_binds(a, true));
                self.kept.insert(alias_binds(a, false));
            }
            AnyNodeRef::StmtFunctionDef(f) => {
                self.kept.insert(f.name.id.as_str());
            }
            AnyNodeRef::StmtClassDef(c) => {
                self.kept.insert(c.name.id.as_str());
                let mut class_level = ClassLevel::default();
                class_level.visit_body(&c.body);
                self.kept.extend(class_level.stores);
            }
            AnyNodeRef::ExceptHandlerExceptHandler(h) => {
                self.kept.extend(h.name.iter().map(|n| n.id.as_str()));
            }
            AnyNodeRef::PatternMatchAs(p) => self.kept.extend(p.name.iter().map(|n| n.id.as_str())),
            AnyNodeRef::PatternMatchStar(p) => {
                self.kept.extend(p.name.iter().map(|n| n.id.as_str()));
            }
            AnyNodeRef::PatternMatchMapping(p) => {
                self.kept.extend(p.rest.iter().map(|n| n.id.as_str()));
            }
            AnyNodeRef::TypeParamTypeVar(t) => {
                self.kept.insert(t.name.id.as_str());
            }
            AnyNodeRef::TypeParamTypeVarTuple(t) => {
                self.kept.insert(t.name.id.as_str());
            }
            AnyNodeRef::TypeParamParamSpec(t) => {
                self.kept.insert(t.name.id.as_str());
            }
            _ => {}
        }
        TraversalSignal::Traverse
    }
}

/// Names stored in a class body itself (not in its methods or lambdas).
#[derive(Default)]
struct ClassLevel<'a> {
    stores: HashSet<&'a str>,
}

impl<'a> SourceOrderVisitor<'a> for ClassLevel<'a> {
    fn enter_node(&mut self, node: AnyNodeRef<'a>) -> TraversalSignal {
        match node {
            AnyNodeRef::StmtFunctionDef(_) | AnyNodeRef::ExprLambda(_) => TraversalSignal::Skip,
            AnyNodeRef::ExprName(n) => {
                if n.ctx != ExprContext::Load {
                    self.stores.insert(n.id.as_str());
                }
                TraversalSignal::Traverse
            }
            _ => TraversalSignal::Traverse,
        }
    }
}

/// Replaces each marked local by `$N`, numbered by first appearance in the text.
fn number_locals(text: &str) -> String {
    let mut numbers: HashMap<&str, usize> = HashMap::new();
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split(LOCAL_MARK);
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    while let (Some(name), Some(after)) = (parts.next(), parts.next()) {
        let next = numbers.len() + 1;
        let number = *numbers.entry(name).or_insert(next);
        out.push('$');
        out.push_str(&number.to_string());
        out.push_str(after);
    }
    out
}

/// Deepest parenthesis nesting outside string and bytes literals, or 0 when
/// there are too few parentheses to matter.
fn paren_depth(text: &str) -> usize {
    if text.bytes().filter(|&b| b == b'(').count() <= MAX_DEPTH {
        return 0;
    }
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'(' {
            depth += 1;
            deepest = deepest.max(depth);
        } else if b == b')' {
            depth = depth.saturating_sub(1);
        }
    }
    deepest
}

/// The start of the keyword before `offset`, skipping whitespace and line
/// continuations: the `def`/`class` before a name, or the `async` before `def`.
fn keyword_before(source: &str, offset: usize) -> usize {
    let bytes = source.as_bytes();
    let mut end = offset.min(bytes.len());
    loop {
        match end.checked_sub(1).map(|i| bytes[i]) {
            Some(b' ' | b'\t' | b'\x0c') => end -= 1,
            Some(b'\n' | b'\r') => {
                // Only a backslash continuation can separate a keyword from what follows.
                let mut i = end - 1;
                if bytes[i] == b'\n' && i > 0 && bytes[i - 1] == b'\r' {
                    i -= 1;
                }
                if i > 0 && bytes[i - 1] == b'\\' {
                    end = i - 1;
                } else {
                    return end;
                }
            }
            _ => break,
        }
    }
    let mut start = end;
    while start > 0 && bytes[start - 1].is_ascii_alphabetic() {
        start -= 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_parser::parse_module;

    type TestResult = Result<(), String>;

    fn units(source: &str) -> Result<Vec<(String, String)>, String> {
        let parsed = parse_module(source).map_err(|e| e.to_string())?;
        let lines = LineIndex::new(source);
        extract(parsed.syntax(), source, &lines).map_err(|r| format!("{}: {}", r.line, r.message))
    }

    fn check(source: &str, want: &[(&str, &str)]) -> TestResult {
        let got = units(source)?;
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, t)| ((*k).to_owned(), (*t).to_owned()))
            .collect();
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:#?}"))
        }
    }

    #[test]
    fn every_statement_is_a_unit_with_locals_numbered() -> TestResult {
        check(
            "import pytest\nCASES = [1]\n@pytest.mark.parametrize('a', CASES)\ndef test_a(a: int) -> None:\n    \"\"\"Doc.\"\"\"\n    got: int = inc(a)\n    for item in got:\n        total = item\n    assert got\n",
            &[
                ("=CASES", "(= CASES (list 1))"),
                ("=pytest", "(import pytest)"),
                (
                    "test_a",
                    "@ (call pytest.mark.parametrize \"a\" CASES)\ndef test_a (a)\n(= $1 (call inc a))\n(for $2 $1 ((= $3 $2)) ())\n(assert $1)",
                ),
            ],
        )
    }

    #[test]
    fn classes_members_and_repeated_labels() -> TestResult {
        check(
            "class TestA:\n    limit = 3\n    def test_x(self):\n        class F:\n            y = 1\n        import os\n        y = os\n        assert y\n\ndef test_a():\n    assert first()\n\ndef test_a():\n    assert second()\ntest_a.__test__ = False\n",
            &[
                ("<code>", "(= test_a.__test__ False)"),
                ("TestA", "class TestA ()\n(= limit 3)"),
                (
                    "TestA::test_x",
                    "def test_x (self)\n(class F () ((= y 1)))\n(import os)\n(= y os)\n(assert y)",
                ),
                ("test_a", "def test_a ()\n(assert (call first))"),
                ("test_a#2", "def test_a ()\n(assert (call second))"),
            ],
        )
    }

    #[test]
    fn too_deep_lines_fail_at_the_statement_line() -> TestResult {
        let deep = "-".repeat(MAX_DEPTH + 5);
        match units(&format!(
            "import pytest\n\ndef helper():\n    y = {deep}x\n"
        )) {
            Err(message) if message == "4: nests more than 100 levels deep" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn keywords_are_found_before_names() -> TestResult {
        let source = "async \\\n  def f(): pass";
        let at = source.find("f(").ok_or("no f")?;
        let def = keyword_before(source, at);
        let async_kw = keyword_before(source, def);
        if (def, async_kw) == (10, 0) {
            Ok(())
        } else {
            Err(format!("{def} {async_kw}"))
        }
    }
}
