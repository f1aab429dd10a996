//! Units, keys, items, contexts and data lines (docs/surface.md §3-5), the Rust
//! twin of `_Extractor` in `python/oracle_gate/surface.py`.
//!
//! Fragments are rendered lazily and at most once, as in the Python extractor,
//! so a definition replaced by a later one of the same name never renders and
//! never fails the depth check.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};

use ruff_python_ast::visitor::source_order::{SourceOrderVisitor, TraversalSignal};
use ruff_python_ast::{self as ast, AnyNodeRef, ExceptHandler, Expr, ModModule, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::printer::{Def, Frag, IfView, Orelse, Printer, MAX_DEPTH};
use super::source::{LineIndex, Refusal};

const PYTEST_CALLS: [&str; 8] = [
    "raises",
    "warns",
    "deprecated_call",
    "approx",
    "skip",
    "xfail",
    "fail",
    "importorskip",
];
const SELF_CALLS: [&str; 2] = ["fail", "skipTest"];
const FIXTURE_NAMES: [&str; 2] = ["fixture", "yield_fixture"];

/// The `(key, text)` units of a parsed module, sorted by key.
pub(crate) fn extract(
    module: &ModModule,
    source: &str,
    lines: &LineIndex,
) -> Result<Vec<(String, String)>, Refusal> {
    let mut extractor = Extractor::new(module, source, lines);
    let mut out = BTreeMap::new();
    let items = extractor.scopes[MODULE].items.clone();
    extractor.collect(MODULE, &[], &[], &items, &mut out);
    if let Some(&line) = extractor.too_deep.iter().min() {
        return Err(Refusal {
            message: format!("nests more than {MAX_DEPTH} levels deep"),
            line,
        });
    }
    Ok(out.into_iter().collect())
}

/// What a lazy fragment renders.
#[derive(Clone, Copy)]
enum Piece<'a> {
    /// A whole statement.
    Stmt(&'a Stmt),
    /// An `elif` rendered whole, as the `if` CPython nests it as.
    Elif(IfView<'a>),
    /// `(if T)` or `(else T)`.
    If(&'a Expr, bool),
    /// `(while T)` or `(while-else T)`.
    While(&'a Expr, bool),
    /// `(for X I)`, `(for-else X I)`, and the `async-for` forms.
    For(&'a ast::StmtFor, bool),
    /// `(with (W...))` or `(async-with (W...))`.
    With(&'a ast::StmtWith),
    /// `(try H...)` or `(try* H...)`.
    Try(&'a ast::StmtTry),
    /// `(except T N)` or `(except* T N)`.
    Handler(&'a ast::ExceptHandlerExceptHandler, bool),
    /// `(try-else)`.
    TryElse,
    /// `(finally)`.
    Finally,
    /// `(case S P [G])`.
    Case(&'a Expr, &'a ast::MatchCase),
    /// `(decorator E)`.
    DecoratorEntry(&'a ast::Decorator),
    /// `(HEAD)`, a nested definition's header in parentheses.
    HeadEntry(Def<'a>),
    /// The bare decorator expression of an `@` line.
    Decorator(&'a ast::Decorator),
    /// The header line of a unit or an enclosing class.
    Head(Def<'a>),
}

struct Lazy<'a> {
    line: u32,
    piece: Piece<'a>,
    frag: Option<Frag<'a>>,
}

type LazyId = usize;
type ScopeId = usize;
const MODULE: ScopeId = 0;

/// One line of a unit: its kind word, then its fragments separated by spaces.
#[derive(Clone)]
struct Line {
    kind: &'static str,
    parts: Vec<LazyId>,
}

struct Assign {
    line: Line,
    order: TextSize,
}

#[derive(Default)]
struct Scope<'a> {
    items: Vec<Line>,
    assigns: HashMap<&'a str, Vec<usize>>,
    /// Members in definition order; a replaced member's slot becomes None.
    members: Vec<Option<Member<'a>>>,
    by_name: HashMap<&'a str, usize>,
}

struct Member<'a> {
    def: Def<'a>,
    at: Vec<LazyId>,
    scope: Option<ScopeId>,
}

/// A statement of a block: a real one, or an `elif` clause seen as a nested `if`.
#[derive(Clone, Copy)]
enum Node<'a> {
    Stmt(&'a Stmt),
    Elif(IfView<'a>, TextSize),
}

/// A block of statements: a body, or the single `if` an `elif` stands for.
#[derive(Clone, Copy)]
enum Block<'a> {
    Stmts(&'a [Stmt]),
    Elif(IfView<'a>, TextSize),
}

impl<'a> Block<'a> {
    fn nodes(self) -> Vec<Node<'a>> {
        match self {
            Self::Stmts(stmts) => stmts.iter().map(Node::Stmt).collect(),
            Self::Elif(view, start) => vec![Node::Elif(view, start)],
        }
    }

    fn is_empty(self) -> bool {
        matches!(self, Self::Stmts(stmts) if stmts.is_empty())
    }
}

struct Extractor<'a> {
    source: &'a str,
    lines: &'a LineIndex,
    printer: Printer<'a>,
    lazies: Vec<Lazy<'a>>,
    scopes: Vec<Scope<'a>>,
    assigns: Vec<Assign>,
    too_deep: Vec<u32>,
    judge: Judge<'a>,
}

impl<'a> Extractor<'a> {
    fn new(module: &'a ModModule, source: &'a str, lines: &'a LineIndex) -> Self {
        let mut extractor = Self {
            source,
            lines,
            printer: Printer::new(source),
            lazies: Vec::new(),
            scopes: vec![Scope::default()],
            assigns: Vec::new(),
            too_deep: Vec::new(),
            judge: Judge::from_imports(&module.body),
        };
        extractor.walk_scope(Block::Stmts(&module.body), &[], MODULE);
        extractor
    }

    fn lazy(&mut self, line: u32, piece: Piece<'a>) -> LazyId {
        self.lazies.push(Lazy {
            line,
            piece,
            frag: None,
        });
        self.lazies.len() - 1
    }

    fn line_of(&self, offset: TextSize) -> u32 {
        self.lines.line(offset)
    }

    /// The line CPython gives a node: a definition's is its `def`/`class` keyword's,
    /// not its first decorator's.
    fn node_line(&self, node: Node<'a>) -> u32 {
        match node {
            Node::Elif(_, start) => self.line_of(start),
            Node::Stmt(Stmt::FunctionDef(f)) => self.def_line(Def::Func(f)),
            Node::Stmt(Stmt::ClassDef(c)) => self.def_line(Def::Class(c)),
            Node::Stmt(s) => self.line_of(s.start()),
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

    fn piece_of(node: Node<'a>) -> Piece<'a> {
        match node {
            Node::Stmt(s) => Piece::Stmt(s),
            Node::Elif(view, _) => Piece::Elif(view),
        }
    }

    fn with_ctx(ctx: &[LazyId], last: LazyId) -> Vec<LazyId> {
        let mut parts = ctx.to_vec();
        parts.push(last);
        parts
    }

    // -- walking ---------------------------------------------------------------

    fn walk_scope(&mut self, block: Block<'a>, ctx: &[LazyId], scope: ScopeId) {
        for node in block.nodes() {
            let def = match node {
                Node::Stmt(Stmt::FunctionDef(f)) => Some(Def::Func(f)),
                Node::Stmt(Stmt::ClassDef(c)) => Some(Def::Class(c)),
                _ => None,
            };
            if let Some(def) = def {
                let inner = if let Def::Class(c) = def {
                    self.scopes.push(Scope::default());
                    let inner = self.scopes.len() - 1;
                    self.walk_scope(Block::Stmts(&c.body), &[], inner);
                    Some(inner)
                } else {
                    None
                };
                let member = Member {
                    def,
                    at: ctx.to_vec(),
                    scope: inner,
                };
                let s = &mut self.scopes[scope];
                if let Some(old) = s.by_name.get(def.name()).copied() {
                    s.members[old] = None;
                }
                s.by_name.insert(def.name(), s.members.len());
                s.members.push(Some(member));
                continue;
            }
            let binds = match node {
                Node::Stmt(s) => bound_names(s),
                Node::Elif(..) => Vec::new(),
            };
            let mut stmt_lazy = None;
            if !binds.is_empty() {
                let id = self.lazy(self.node_line(node), Self::piece_of(node));
                stmt_lazy = Some(id);
                let order = match node {
                    Node::Stmt(s) => s.start(),
                    Node::Elif(_, start) => start,
                };
                self.assigns.push(Assign {
                    line: Line {
                        kind: "data",
                        parts: Self::with_ctx(ctx, id),
                    },
                    order,
                });
                let index = self.assigns.len() - 1;
                for name in &binds {
                    self.scopes[scope]
                        .assigns
                        .entry(name)
                        .or_default()
                        .push(index);
                }
            }
            if binds.contains(&"pytestmark") || self.is_item(node) {
                let id = match stmt_lazy {
                    Some(id) => id,
                    None => self.lazy(self.node_line(node), Self::piece_of(node)),
                };
                let line = Line {
                    kind: "item",
                    parts: Self::with_ctx(ctx, id),
                };
                self.scopes[scope].items.push(line);
                continue;
            }
            for (entries, inner) in self.branches(node) {
                let mut inner_ctx = ctx.to_vec();
                inner_ctx.extend(entries);
                self.walk_scope(inner, &inner_ctx, scope);
            }
        }
    }

    fn walk_body(&mut self, block: Block<'a>, ctx: &[LazyId], out: &mut Vec<Line>) {
        for node in block.nodes() {
            if self.is_item(node) {
                let id = self.lazy(self.node_line(node), Self::piece_of(node));
                out.push(Line {
                    kind: "item",
                    parts: Self::with_ctx(ctx, id),
                });
                continue;
            }
            for (entries, inner) in self.branches(node) {
                let mut inner_ctx = ctx.to_vec();
                inner_ctx.extend(entries);
                self.walk_body(inner, &inner_ctx, out);
            }
        }
    }

    /// The bodies of a compound statement, each with the context entries it adds.
    fn branches(&mut self, node: Node<'a>) -> Vec<(Vec<LazyId>, Block<'a>)> {
        let line = self.node_line(node);
        let mut out = Vec::new();
        let stmt = match node {
            Node::Elif(view, _) => {
                self.if_branches(view, line, &mut out);
                return out;
            }
            Node::Stmt(s) => s,
        };
        match stmt {
            Stmt::If(i) => {
                let view = IfView {
                    test: &i.test,
                    body: &i.body,
                    rest: &i.elif_else_clauses,
                };
                self.if_branches(view, line, &mut out);
            }
            Stmt::While(w) => {
                out.push((
                    vec![self.lazy(line, Piece::While(&w.test, false))],
                    Block::Stmts(&w.body),
                ));
                if !w.orelse.is_empty() {
                    out.push((
                        vec![self.lazy(line, Piece::While(&w.test, true))],
                        Block::Stmts(&w.orelse),
                    ));
                }
            }
            Stmt::For(f) => {
                out.push((
                    vec![self.lazy(line, Piece::For(f, false))],
                    Block::Stmts(&f.body),
                ));
                if !f.orelse.is_empty() {
                    out.push((
                        vec![self.lazy(line, Piece::For(f, true))],
                        Block::Stmts(&f.orelse),
                    ));
                }
            }
            Stmt::With(w) => {
                out.push((vec![self.lazy(line, Piece::With(w))], Block::Stmts(&w.body)))
            }
            Stmt::Try(t) => {
                out.push((vec![self.lazy(line, Piece::Try(t))], Block::Stmts(&t.body)));
                for handler in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = handler;
                    let entry = self.lazy(self.line_of(h.start()), Piece::Handler(h, t.is_star));
                    out.push((vec![entry], Block::Stmts(&h.body)));
                }
                if !t.orelse.is_empty() {
                    out.push((
                        vec![self.lazy(line, Piece::TryElse)],
                        Block::Stmts(&t.orelse),
                    ));
                }
                if !t.finalbody.is_empty() {
                    out.push((
                        vec![self.lazy(line, Piece::Finally)],
                        Block::Stmts(&t.finalbody),
                    ));
                }
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    out.push((
                        vec![self.lazy(line, Piece::Case(&m.subject, case))],
                        Block::Stmts(&case.body),
                    ));
                }
            }
            Stmt::FunctionDef(f) => self.def_branch(Def::Func(f), line, &mut out),
            Stmt::ClassDef(c) => self.def_branch(Def::Class(c), line, &mut out),
            _ => {}
        }
        out
    }

    fn if_branches(
        &mut self,
        view: IfView<'a>,
        line: u32,
        out: &mut Vec<(Vec<LazyId>, Block<'a>)>,
    ) {
        out.push((
            vec![self.lazy(line, Piece::If(view.test, false))],
            Block::Stmts(view.body),
        ));
        let orelse = match view.orelse() {
            Orelse::Body(stmts) => Block::Stmts(stmts),
            Orelse::Elif(inner) => {
                let start = view.rest.first().map_or(TextSize::default(), Ranged::start);
                Block::Elif(inner, start)
            }
        };
        if !orelse.is_empty() {
            out.push((vec![self.lazy(line, Piece::If(view.test, true))], orelse));
        }
    }

    fn def_branch(&mut self, def: Def<'a>, line: u32, out: &mut Vec<(Vec<LazyId>, Block<'a>)>) {
        let mut entries: Vec<LazyId> = Vec::new();
        for decorator in def.decorators() {
            let decorator_line = self.line_of(decorator.expression.start());
            entries.push(self.lazy(decorator_line, Piece::DecoratorEntry(decorator)));
        }
        entries.push(self.lazy(line, Piece::HeadEntry(def)));
        out.push((entries, Block::Stmts(def.body())));
    }

    fn is_item(&self, node: Node<'a>) -> bool {
        match node {
            Node::Stmt(Stmt::Assert(_)) => true,
            Node::Stmt(s) => self.judge.in_own_parts(s),
            Node::Elif(view, _) => self.judge.in_expr(view.test),
        }
    }

    // -- units -----------------------------------------------------------------

    fn collect(
        &mut self,
        scope: ScopeId,
        class_names: &[&'a str],
        classes: &[ScopeId],
        prefix: &[Line],
        out: &mut BTreeMap<String, String>,
    ) {
        let members: Vec<(Def<'a>, Vec<LazyId>, Option<ScopeId>)> = self.scopes[scope]
            .members
            .iter()
            .flatten()
            .map(|m| (m.def, m.at.clone(), m.scope))
            .collect();
        for (def, at, inner) in members {
            let mut head: Vec<Line> = prefix.to_vec();
            head.extend(at.iter().map(|&c| Line {
                kind: "at",
                parts: vec![c],
            }));
            for decorator in def.decorators() {
                let line = self.line_of(decorator.expression.start());
                let id = self.lazy(line, Piece::Decorator(decorator));
                head.push(Line {
                    kind: "@",
                    parts: vec![id],
                });
            }
            let def_line = self.def_line(def);
            let id = self.lazy(def_line, Piece::Head(def));
            head.push(Line {
                kind: "",
                parts: vec![id],
            });
            let mut names = class_names.to_vec();
            names.push(def.name());
            if let Some(inner) = inner {
                head.extend(self.scopes[inner].items.iter().cloned());
                let mut inner_classes = classes.to_vec();
                inner_classes.push(inner);
                self.collect(inner, &names, &inner_classes, &head, out);
                continue;
            }
            let Def::Func(func) = def else { continue };
            let mut body = Vec::new();
            self.walk_body(Block::Stmts(&func.body), &[], &mut body);
            if def.name().starts_with("test") || is_fixture(func) || !body.is_empty() {
                head.extend(body);
                let text = self.unit_text(&head, classes);
                out.insert(names.join("::"), text);
            }
        }
    }

    fn frag(&mut self, id: LazyId) -> &Frag<'a> {
        if self.lazies[id].frag.is_none() {
            let piece = self.lazies[id].piece;
            let frag = self.printer.frag(|p, out| render(p, piece, out));
            if paren_depth(&frag.text) > MAX_DEPTH {
                self.too_deep.push(self.lazies[id].line);
            }
            self.lazies[id].frag = Some(frag);
        }
        match &self.lazies[id].frag {
            Some(frag) => frag,
            None => unreachable!("the fragment was rendered just above"),
        }
    }

    fn line_text(
        &mut self,
        line: &Line,
        names: &mut HashSet<&'a str>,
        attrs: &mut HashSet<&'a str>,
    ) -> String {
        let mut text = String::from(line.kind);
        for &part in &line.parts {
            let frag = self.frag(part);
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&frag.text);
            names.extend(frag.names.iter().copied());
            attrs.extend(frag.attrs.iter().copied());
        }
        text
    }

    fn unit_text(&mut self, lines: &[Line], classes: &[ScopeId]) -> String {
        let mut names: HashSet<&'a str> = HashSet::new();
        let mut attrs: HashSet<&'a str> = HashSet::new();
        let mut texts: Vec<String> = lines
            .iter()
            .map(|line| self.line_text(line, &mut names, &mut attrs))
            .collect();
        // `data` lines: scope-level assignments to the names the unit mentions,
        // followed transitively (CASES = BASE + EXTRA pulls BASE and EXTRA too).
        let mut chosen: BTreeMap<TextSize, String> = BTreeMap::new();
        let mut seen_names: HashSet<&'a str> = HashSet::new();
        let mut seen_attrs: HashSet<&'a str> = HashSet::new();
        loop {
            let new_names: Vec<&'a str> = names.difference(&seen_names).copied().collect();
            let new_attrs: Vec<&'a str> = attrs.difference(&seen_attrs).copied().collect();
            if new_names.is_empty() && new_attrs.is_empty() {
                break;
            }
            seen_names.extend(new_names.iter().copied());
            seen_attrs.extend(new_attrs.iter().copied());
            let mut found: Vec<usize> = Vec::new();
            for name in &new_names {
                found.extend(self.scopes[MODULE].assigns.get(name).into_iter().flatten());
                for &scope in classes {
                    found.extend(self.scopes[scope].assigns.get(name).into_iter().flatten());
                }
            }
            for attr in &new_attrs {
                for &scope in classes {
                    found.extend(self.scopes[scope].assigns.get(attr).into_iter().flatten());
                }
            }
            for index in found {
                if let Entry::Vacant(slot) = chosen.entry(self.assigns[index].order) {
                    let line = self.assigns[index].line.clone();
                    slot.insert(self.line_text(&line, &mut names, &mut attrs));
                }
            }
        }
        texts.extend(chosen.into_values());
        texts.join("\n")
    }
}

/// Renders one lazy fragment.
fn render<'a>(
    p: &mut Printer<'a>,
    piece: Piece<'a>,
    out: &mut String,
) -> Result<(), super::printer::TooDeep> {
    match piece {
        Piece::Stmt(s) => p.stmt(s, out),
        Piece::Elif(view) => p.if_stmt(view, out),
        Piece::If(test, is_else) => p.join(if is_else { "else" } else { "if" }, [test], out),
        Piece::While(test, is_else) => {
            p.join(if is_else { "while-else" } else { "while" }, [test], out)
        }
        Piece::For(f, is_else) => {
            out.push('(');
            out.push_str(if f.is_async { "async-for" } else { "for" });
            if is_else {
                out.push_str("-else");
            }
            out.push(' ');
            p.expr(&f.target, out)?;
            out.push(' ');
            p.expr(&f.iter, out)?;
            out.push(')');
            Ok(())
        }
        Piece::With(w) => {
            out.push_str(if w.is_async { "(async-with " } else { "(with " });
            p.with_items(&w.items, out)?;
            out.push(')');
            Ok(())
        }
        Piece::Try(t) => {
            out.push_str(if t.is_star { "(try*" } else { "(try" });
            for handler in &t.handlers {
                let ExceptHandler::ExceptHandler(h) = handler;
                out.push(' ');
                p.handler_head(h, t.is_star, out)?;
            }
            out.push(')');
            Ok(())
        }
        Piece::Handler(h, star) => p.handler_head(h, star, out),
        Piece::TryElse => {
            out.push_str("(try-else)");
            Ok(())
        }
        Piece::Finally => {
            out.push_str("(finally)");
            Ok(())
        }
        Piece::Case(subject, case) => p.case_head(subject, case, out),
        Piece::DecoratorEntry(d) => p.decorator_entry(d, out),
        Piece::HeadEntry(def) => {
            out.push('(');
            p.head(def, out)?;
            out.push(')');
            Ok(())
        }
        Piece::Decorator(d) => p.expr(&d.expression, out),
        Piece::Head(def) => p.head(def, out),
    }
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

fn target_names<'a>(target: &'a Expr, out: &mut Vec<&'a str>) {
    match target {
        Expr::Name(n) => out.push(n.id.as_str()),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| target_names(e, out)),
        Expr::List(l) => l.elts.iter().for_each(|e| target_names(e, out)),
        Expr::Starred(s) => target_names(&s.value, out),
        _ => {}
    }
}

/// Names a scope-level assignment binds (the candidates for `data` lines).
fn bound_names(stmt: &Stmt) -> Vec<&str> {
    let mut out = Vec::new();
    match stmt {
        Stmt::Assign(a) => a.targets.iter().for_each(|t| target_names(t, &mut out)),
        Stmt::AnnAssign(ast::StmtAnnAssign { target, .. })
        | Stmt::AugAssign(ast::StmtAugAssign { target, .. }) => {
            if let Expr::Name(n) = &**target {
                out.push(n.id.as_str());
            }
        }
        _ => {}
    }
    out
}

fn is_fixture(func: &ast::StmtFunctionDef) -> bool {
    func.decorator_list.iter().any(|d| {
        let callee = match &d.expression {
            Expr::Call(call) => &*call.func,
            other => other,
        };
        match callee {
            Expr::Name(n) => FIXTURE_NAMES.contains(&n.id.as_str()),
            Expr::Attribute(a) => FIXTURE_NAMES.contains(&a.attr.id.as_str()),
            _ => false,
        }
    })
}

/// Recognises judging calls (docs/surface.md §5.1).
struct Judge<'a> {
    pytest_modules: HashSet<&'a str>,
    from_pytest: HashSet<&'a str>,
}

impl<'a> Judge<'a> {
    /// Reads every `import pytest [as M]` and `from pytest import X [as N]` in the file.
    fn from_imports(body: &'a [Stmt]) -> Self {
        let mut judge = Self {
            pytest_modules: HashSet::from(["pytest"]),
            from_pytest: HashSet::new(),
        };
        let mut stack: Vec<&'a Stmt> = body.iter().rev().collect();
        while let Some(stmt) = stack.pop() {
            match stmt {
                Stmt::Import(i) => {
                    for alias in &i.names {
                        if alias.name.id.as_str() == "pytest" {
                            judge
                                .pytest_modules
                                .insert(alias.asname.as_ref().map_or("pytest", |a| a.id.as_str()));
                        }
                    }
                }
                Stmt::ImportFrom(i)
                    if i.level == 0
                        && i.module.as_ref().is_some_and(|m| m.id.as_str() == "pytest") =>
                {
                    for alias in &i.names {
                        if PYTEST_CALLS.contains(&alias.name.id.as_str()) {
                            let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                            judge.from_pytest.insert(bound.id.as_str());
                        }
                    }
                }
                _ => {}
            }
            for block in nested_bodies(stmt) {
                stack.extend(block.iter().rev());
            }
        }
        judge
    }

    fn is_judging_callee(&self, func: &Expr) -> bool {
        match func {
            Expr::Name(n) => {
                let id = n.id.as_str();
                id.starts_with("assert") || self.from_pytest.contains(id)
            }
            Expr::Attribute(a) => {
                let attr = a.attr.id.as_str();
                if attr.starts_with("assert") {
                    return true;
                }
                match &*a.value {
                    Expr::Name(base) => {
                        let base = base.id.as_str();
                        (self.pytest_modules.contains(base) && PYTEST_CALLS.contains(&attr))
                            || (base == "self" && SELF_CALLS.contains(&attr))
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn in_expr(&self, expr: &Expr) -> bool {
        let mut finder = CallFinder {
            judge: self,
            found: false,
        };
        finder.visit_expr(expr);
        finder.found
    }

    /// Whether a statement's own parts (everything but its nested statements)
    /// contain a judging call.
    fn in_own_parts(&self, stmt: &Stmt) -> bool {
        let mut f = CallFinder {
            judge: self,
            found: false,
        };
        match stmt {
            Stmt::FunctionDef(d) => {
                d.decorator_list
                    .iter()
                    .for_each(|dec| f.visit_decorator(dec));
                if let Some(tp) = &d.type_params {
                    f.visit_type_params(tp);
                }
                f.visit_parameters(&d.parameters);
                if let Some(r) = &d.returns {
                    f.visit_expr(r);
                }
            }
            Stmt::ClassDef(c) => {
                c.decorator_list
                    .iter()
                    .for_each(|dec| f.visit_decorator(dec));
                if let Some(tp) = &c.type_params {
                    f.visit_type_params(tp);
                }
                if let Some(args) = &c.arguments {
                    f.visit_arguments(args);
                }
            }
            Stmt::Return(r) => r.value.iter().for_each(|v| f.visit_expr(v)),
            Stmt::Delete(d) => d.targets.iter().for_each(|t| f.visit_expr(t)),
            Stmt::TypeAlias(t) => {
                f.visit_expr(&t.name);
                if let Some(tp) = &t.type_params {
                    f.visit_type_params(tp);
                }
                f.visit_expr(&t.value);
            }
            Stmt::Assign(a) => {
                a.targets.iter().for_each(|t| f.visit_expr(t));
                f.visit_expr(&a.value);
            }
            Stmt::AugAssign(a) => {
                f.visit_expr(&a.target);
                f.visit_expr(&a.value);
            }
            Stmt::AnnAssign(a) => {
                f.visit_expr(&a.target);
                f.visit_expr(&a.annotation);
                a.value.iter().for_each(|v| f.visit_expr(v));
            }
            Stmt::For(l) => {
                f.visit_expr(&l.target);
                f.visit_expr(&l.iter);
            }
            Stmt::While(w) => f.visit_expr(&w.test),
            Stmt::If(i) => f.visit_expr(&i.test),
            Stmt::With(w) => w.items.iter().for_each(|item| f.visit_with_item(item)),
            Stmt::Match(m) => {
                f.visit_expr(&m.subject);
                for case in &m.cases {
                    f.visit_pattern(&case.pattern);
                    case.guard.iter().for_each(|g| f.visit_expr(g));
                }
            }
            Stmt::Raise(r) => {
                r.exc.iter().for_each(|e| f.visit_expr(e));
                r.cause.iter().for_each(|c| f.visit_expr(c));
            }
            Stmt::Try(t) => {
                for handler in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = handler;
                    h.type_.iter().for_each(|ty| f.visit_expr(ty));
                }
            }
            Stmt::Assert(_) => return true,
            Stmt::Expr(e) => f.visit_expr(&e.value),
            Stmt::Import(_)
            | Stmt::ImportFrom(_)
            | Stmt::Global(_)
            | Stmt::Nonlocal(_)
            | Stmt::Pass(_)
            | Stmt::Break(_)
            | Stmt::Continue(_)
            | Stmt::IpyEscapeCommand(_) => {}
        }
        f.found
    }
}

/// The statement lists nested directly in a statement (for import scanning).
fn nested_bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::ClassDef(c) => vec![&c.body],
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

/// Finds a judging call anywhere in the nodes it visits, stopping at the first.
struct CallFinder<'j, 'a> {
    judge: &'j Judge<'a>,
    found: bool,
}

impl<'n> SourceOrderVisitor<'n> for CallFinder<'_, '_> {
    fn enter_node(&mut self, node: AnyNodeRef<'n>) -> TraversalSignal {
        if self.found {
            return TraversalSignal::Skip;
        }
        if let AnyNodeRef::ExprCall(call) = node {
            if self.judge.is_judging_callee(&call.func) {
                self.found = true;
                return TraversalSignal::Skip;
            }
        }
        TraversalSignal::Traverse
    }
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

    #[test]
    fn a_test_with_parametrize_data_and_a_helper() -> TestResult {
        let source = "import pytest\n\nCASES = [(1, 2), (0x10, 17)]\n\n\n@pytest.mark.parametrize(\"a, b\", CASES)\ndef test_increment(a, b):\n    \"\"\"Doc.\"\"\"\n    assert inc(a) == b, f\"inc({a!r})\"\n\n\ndef make():\n    return 1\n";
        let got = units(source)?;
        let want = vec![(
            "test_increment".to_owned(),
            "@ (call pytest.mark.parametrize \"a, b\" CASES)\ndef test_increment (a b)\nitem (assert (cmp (call inc a) == b) (fstr \"inc(\" (fv a !r) \")\"))\ndata (= CASES (list (tuple 1 2) (tuple 16 17)))".to_owned(),
        )];
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:#?}"))
        }
    }

    #[test]
    fn classes_contexts_and_the_last_definition_winning() -> TestResult {
        let source = "class TestA:\n    limit = 3\n    def test_x(self):\n        for i in range(self.limit):\n            if i:\n                self.assertTrue(i)\n\ndef test_a():\n    assert first()\n\ndef test_a():\n    assert second()\n";
        let got = units(source)?;
        let want = vec![
            (
                "TestA::test_x".to_owned(),
                "class TestA ()\ndef test_x (self)\nitem (for i (call range self.limit)) (if i) (expr (call self.assertTrue i))\ndata (= limit 3)".to_owned(),
            ),
            ("test_a".to_owned(), "def test_a ()\nitem (assert (call second))".to_owned()),
        ];
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:#?}"))
        }
    }

    #[test]
    fn too_deep_fragments_fail_at_the_statement_line() -> TestResult {
        let deep = "-".repeat(MAX_DEPTH + 5);
        match units(&format!(
            "import pytest\n\ndef test_a():\n    assert {deep}x\n"
        )) {
            Err(message) if message == "4: nests more than 100 levels deep" => {}
            other => return Err(format!("{other:?}")),
        }
        // Outside any unit, depth does not matter.
        let found = units(&format!("def helper():\n    y = {deep}x\n"))?;
        if found.is_empty() {
            Ok(())
        } else {
            Err(format!("{found:?}"))
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
