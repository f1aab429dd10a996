//! The canonical S-expression printer (docs/surface.md §6), the Rust twin of
//! `_Printer` in `python/oracle_gate/surface.py`.
//!
//! Every function writes into one output buffer and mirrors the Python printer's
//! depth accounting exactly: each expression, statement and pattern node rendered
//! counts one level, and rendering past `MAX_DEPTH + 1` levels stops with
//! [`TooDeep`], so deep input can neither overflow the stack nor differ from
//! the Python side in which fragments fail.

use ruff_python_ast::{
    self as ast, BoolOp, CmpOp, ConversionFlag, ElifElseClause, ExceptHandler, Expr,
    InterpolatedStringElement, Number, Operator, Parameters, Pattern, Singleton, Stmt, TypeParam,
    TypeParams, UnaryOp,
};
use ruff_text_size::Ranged;
use std::collections::HashSet;

use super::annotation::running;
use super::literal::{self, Body, PyText};

/// Deepest parenthesis nesting allowed in one canonical line (docs/surface.md §8).
pub(crate) const MAX_DEPTH: usize = 100;

/// Rendering recursed past `MAX_DEPTH + 1` levels; the text would be too deep anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooDeep;

type Render = Result<(), TooDeep>;

/// Brackets a local name while rendering; never in rendered text (strings are JSON-escaped).
pub(crate) const LOCAL_MARK: char = '\0';

/// A function or class definition, for headers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Def<'a> {
    /// `def` / `async def`.
    Func(&'a ast::StmtFunctionDef),
    /// `class`.
    Class(&'a ast::StmtClassDef),
}

impl<'a> Def<'a> {
    /// The decorators, top to bottom.
    pub(crate) fn decorators(self) -> &'a [ast::Decorator] {
        match self {
            Self::Func(f) => &f.decorator_list,
            Self::Class(c) => &c.decorator_list,
        }
    }

    /// The body.
    pub(crate) fn body(self) -> &'a [Stmt] {
        match self {
            Self::Func(f) => &f.body,
            Self::Class(c) => &c.body,
        }
    }
}

/// An `if` statement as CPython sees it: a test, a body, and the `elif`/`else`
/// clauses that follow, which CPython nests as an `If` in the `orelse`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IfView<'a> {
    /// The condition.
    pub test: &'a Expr,
    /// The statements under it.
    pub body: &'a [Stmt],
    /// The remaining `elif` and `else` clauses.
    pub rest: &'a [ElifElseClause],
}

impl<'a> IfView<'a> {
    /// The `else` branch: empty, the `else` body, or a nested `if` for an `elif`.
    pub(crate) fn orelse(self) -> Orelse<'a> {
        match self.rest.split_first() {
            None => Orelse::Body(&[]),
            Some((clause, rest)) => match &clause.test {
                Some(test) => Orelse::Elif(IfView {
                    test,
                    body: &clause.body,
                    rest,
                }),
                None => Orelse::Body(&clause.body),
            },
        }
    }
}

/// The `orelse` of an [`IfView`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Orelse<'a> {
    /// Plain statements (possibly none).
    Body(&'a [Stmt]),
    /// An `elif`: a single nested `if`.
    Elif(IfView<'a>),
}

/// Renders nodes; names in `locals` are bracketed by [`LOCAL_MARK`] for numbering.
pub(crate) struct Printer<'a> {
    source: &'a str,
    depth: usize,
    /// The local names of the unit function being rendered (docs/surface.md §4.2).
    pub(crate) locals: HashSet<&'a str>,
    /// Inside a function body, where a variable's annotation is never evaluated.
    pub(crate) in_function: bool,
}

impl<'a> Printer<'a> {
    /// A printer for nodes parsed from `source`, which string literals are re-read from.
    pub(crate) fn new(source: &'a str) -> Self {
        Self {
            source,
            depth: 0,
            locals: HashSet::new(),
            in_function: false,
        }
    }

    /// Renders one fragment with a fresh depth. A fragment that nests too deeply
    /// becomes `MAX_DEPTH + 1` open parentheses, which the caller's depth check
    /// turns into an error naming the fragment's line.
    pub(crate) fn frag(&mut self, render: impl FnOnce(&mut Self, &mut String) -> Render) -> String {
        self.depth = 0;
        let mut text = String::new();
        if render(self, &mut text).is_err() {
            text = "(".repeat(MAX_DEPTH + 1);
        }
        text
    }

    /// Writes a name, bracketed when it is a local of the unit being rendered.
    fn identifier(&self, id: &'a str, out: &mut String) {
        if self.locals.contains(id) {
            out.push(LOCAL_MARK);
            out.push_str(id);
            out.push(LOCAL_MARK);
        } else {
            out.push_str(id);
        }
    }

    /// Renders `render` inside (`function`) or outside a function body.
    pub(crate) fn in_scope(
        &mut self,
        function: bool,
        render: impl FnOnce(&mut Self) -> Render,
    ) -> Render {
        let saved = std::mem::replace(&mut self.in_function, function);
        let result = render(self);
        self.in_function = saved;
        result
    }

    fn enter(&mut self) -> Render {
        self.depth += 1;
        if self.depth > MAX_DEPTH + 1 {
            Err(TooDeep)
        } else {
            Ok(())
        }
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // -- expressions ----------------------------------------------------------

    /// Renders an expression.
    pub(crate) fn expr(&mut self, expr: &'a Expr, out: &mut String) -> Render {
        self.enter()?;
        self.expr_inner(expr, out)?;
        self.leave();
        Ok(())
    }

    fn opt(&mut self, expr: Option<&'a Expr>, out: &mut String) -> Render {
        match expr {
            Some(e) => self.expr(e, out),
            None => {
                out.push_str("()");
                Ok(())
            }
        }
    }

    /// Writes ` E` for each expression.
    fn spaced<I>(&mut self, exprs: I, out: &mut String) -> Render
    where
        I: IntoIterator<Item = &'a Expr>,
    {
        for e in exprs {
            out.push(' ');
            self.expr(e, out)?;
        }
        Ok(())
    }

    /// Writes `(head E...)`.
    pub(crate) fn join<I>(&mut self, head: &str, exprs: I, out: &mut String) -> Render
    where
        I: IntoIterator<Item = &'a Expr>,
    {
        out.push('(');
        out.push_str(head);
        self.spaced(exprs, out)?;
        out.push(')');
        Ok(())
    }

    fn expr_inner(&mut self, expr: &'a Expr, out: &mut String) -> Render {
        match expr {
            Expr::Name(n) => self.identifier(n.id.as_str(), out),
            Expr::Attribute(a) => self.attribute(a, out)?,
            Expr::StringLiteral(s) => self.string_text(&s.value).write_json(out),
            Expr::BytesLiteral(b) => {
                let bytes: Vec<u8> = b
                    .value
                    .iter()
                    .flat_map(|part| part.value.iter().copied())
                    .collect();
                literal::write_bytes(out, &bytes);
            }
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => out.push_str(&literal::int_decimal(&i.to_string())),
                Number::Float(f) => {
                    out.push_str("(float ");
                    out.push_str(&literal::float_repr(*f));
                    out.push(')');
                }
                Number::Complex { imag, .. } => {
                    out.push_str("(complex ");
                    out.push_str(&literal::float_repr(*imag));
                    out.push(')');
                }
            },
            Expr::BooleanLiteral(b) => out.push_str(if b.value { "True" } else { "False" }),
            Expr::NoneLiteral(_) => out.push_str("None"),
            Expr::EllipsisLiteral(_) => out.push_str("..."),
            Expr::FString(f) => self.fstring(f, out)?,
            Expr::BinOp(b) => self.join(operator(b.op), [&*b.left, &*b.right], out)?,
            Expr::UnaryOp(u) => {
                let head = match u.op {
                    UnaryOp::Not => "not",
                    UnaryOp::USub => "neg",
                    UnaryOp::UAdd => "pos",
                    UnaryOp::Invert => "invert",
                };
                self.join(head, [&*u.operand], out)?;
            }
            Expr::BoolOp(b) => self.bool_op(b, out)?,
            Expr::Compare(c) => {
                out.push_str("(cmp ");
                self.expr(&c.left, out)?;
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    out.push(' ');
                    out.push_str(cmp_op(*op));
                    out.push(' ');
                    self.expr(right, out)?;
                }
                out.push(')');
            }
            Expr::Call(c) => {
                out.push_str("(call ");
                self.expr(&c.func, out)?;
                self.arguments(&c.arguments.args, &c.arguments.keywords, out)?;
                out.push(')');
            }
            Expr::Subscript(s) => self.join("sub", [&*s.value, &*s.slice], out)?,
            Expr::Slice(s) => {
                out.push_str("(slice ");
                self.opt(s.lower.as_deref(), out)?;
                out.push(' ');
                self.opt(s.upper.as_deref(), out)?;
                out.push(' ');
                self.opt(s.step.as_deref(), out)?;
                out.push(')');
            }
            Expr::Starred(s) => self.join("star", [&*s.value], out)?,
            Expr::Tuple(t) => self.join("tuple", &t.elts, out)?,
            Expr::List(l) => self.join("list", &l.elts, out)?,
            Expr::Set(s) => self.join("set", &s.elts, out)?,
            Expr::Dict(d) => {
                out.push_str("(dict");
                for item in &d.items {
                    match &item.key {
                        None => {
                            out.push_str(" (dstar ");
                            self.expr(&item.value, out)?;
                        }
                        Some(key) => {
                            out.push_str(" (: ");
                            self.expr(key, out)?;
                            out.push(' ');
                            self.expr(&item.value, out)?;
                        }
                    }
                    out.push(')');
                }
                out.push(')');
            }
            Expr::Lambda(l) => {
                out.push_str("(lambda ");
                self.params(l.parameters.as_deref(), out)?;
                out.push(' ');
                self.expr(&l.body, out)?;
                out.push(')');
            }
            Expr::If(i) => self.join("ifexp", [&*i.test, &*i.body, &*i.orelse], out)?,
            Expr::Named(n) => self.join(":=", [&*n.target, &*n.value], out)?,
            Expr::Await(a) => self.join("await", [&*a.value], out)?,
            Expr::Yield(y) => self.join("yield", y.value.as_deref(), out)?,
            Expr::YieldFrom(y) => self.join("yield-from", [&*y.value], out)?,
            Expr::ListComp(c) => self.comprehension("listcomp", &[&c.elt], &c.generators, out)?,
            Expr::SetComp(c) => self.comprehension("setcomp", &[&c.elt], &c.generators, out)?,
            Expr::Generator(c) => self.comprehension("genexp", &[&c.elt], &c.generators, out)?,
            Expr::DictComp(c) => {
                out.push_str("(dictcomp ");
                self.opt(c.key.as_deref(), out)?;
                out.push(' ');
                self.expr(&c.value, out)?;
                self.generators(&c.generators, out)?;
                out.push(')');
            }
            Expr::TString(t) => self.tstring(t, out)?,
            Expr::IpyEscapeCommand(_) => out.push_str("(?IpyEscapeCommand)"),
        }
        Ok(())
    }

    fn attribute(&mut self, node: &'a ast::ExprAttribute, out: &mut String) -> Render {
        // A dotted chain renders as one token, walked without recursion.
        let mut chain = vec![node];
        let mut innermost = node;
        while let Expr::Attribute(inner) = &*innermost.value {
            chain.push(inner);
            innermost = inner;
        }
        if let Expr::Name(base) = &*innermost.value {
            self.identifier(base.id.as_str(), out);
            for a in chain.iter().rev() {
                out.push('.');
                out.push_str(a.attr.id.as_str());
            }
            return Ok(());
        }
        for _ in &chain {
            out.push_str("(. ");
        }
        self.expr(&innermost.value, out)?;
        for a in chain.iter().rev() {
            out.push(' ');
            out.push_str(a.attr.id.as_str());
            out.push(')');
        }
        Ok(())
    }

    fn bool_op(&mut self, node: &'a ast::ExprBoolOp, out: &mut String) -> Render {
        // `(a and b) and c` is `a and b and c`: flatten same-operator nesting.
        let mut flat: Vec<&'a Expr> = Vec::new();
        let mut stack: Vec<&'a Expr> = node.values.iter().rev().collect();
        while let Some(value) = stack.pop() {
            match value {
                Expr::BoolOp(inner) if inner.op == node.op => {
                    stack.extend(inner.values.iter().rev())
                }
                _ => flat.push(value),
            }
        }
        let head = match node.op {
            BoolOp::And => "and",
            BoolOp::Or => "or",
        };
        self.join(head, flat, out)
    }

    /// Writes ` A` for each positional argument, then `(= k v)` / `(dstar v)` per keyword.
    fn arguments(
        &mut self,
        args: &'a [Expr],
        keywords: &'a [ast::Keyword],
        out: &mut String,
    ) -> Render {
        self.spaced(args, out)?;
        for kw in keywords {
            match &kw.arg {
                None => out.push_str(" (dstar "),
                Some(arg) => {
                    out.push_str(" (= ");
                    out.push_str(arg.id.as_str());
                    out.push(' ');
                }
            }
            self.expr(&kw.value, out)?;
            out.push(')');
        }
        Ok(())
    }

    fn comprehension(
        &mut self,
        head: &str,
        elts: &[&'a Expr],
        generators: &'a [ast::Comprehension],
        out: &mut String,
    ) -> Render {
        out.push('(');
        out.push_str(head);
        self.spaced(elts.iter().copied(), out)?;
        self.generators(generators, out)?;
        out.push(')');
        Ok(())
    }

    fn generators(&mut self, generators: &'a [ast::Comprehension], out: &mut String) -> Render {
        for g in generators {
            out.push_str(if g.is_async { " (async-for " } else { " (for " });
            self.expr(&g.target, out)?;
            out.push(' ');
            self.expr(&g.iter, out)?;
            self.spaced(&g.ifs, out)?;
            out.push(')');
        }
        Ok(())
    }

    // -- strings ---------------------------------------------------------------

    /// The value of a (possibly concatenated) string literal, with the lone
    /// surrogates CPython keeps and ruff replaces by U+FFFD restored.
    fn string_text(&self, value: &'a ast::StringLiteralValue) -> PyText {
        let mut text = PyText::default();
        for part in value.iter() {
            self.push_literal(
                &mut text,
                &part.value,
                part.flags.prefix().is_raw(),
                part.content_range(),
                false,
            );
        }
        text
    }

    fn push_literal(
        &self,
        text: &mut PyText,
        value: &str,
        raw: bool,
        range: ruff_text_size::TextRange,
        braces: bool,
    ) {
        if raw || !value.contains('\u{FFFD}') {
            text.push_str(value);
            return;
        }
        let decoded = self
            .source
            .get(range.start().to_usize()..range.end().to_usize())
            .and_then(|body| literal::decode_body(body, Body { raw, braces }));
        match decoded {
            Some(points) => text.push_wide(&points),
            None => text.push_str(value),
        }
    }

    fn fstring(&mut self, node: &'a ast::ExprFString, out: &mut String) -> Render {
        out.push_str("(fstr");
        let mut text = PyText::default();
        for part in node.value.iter() {
            match part {
                ast::FStringPart::Literal(s) => {
                    self.push_literal(
                        &mut text,
                        &s.value,
                        s.flags.prefix().is_raw(),
                        s.content_range(),
                        false,
                    );
                }
                ast::FStringPart::FString(f) => {
                    let raw = f.flags.prefix().is_raw();
                    self.fstring_elements(&f.elements, raw, &mut text, out)?;
                }
            }
        }
        flush_text(&mut text, out);
        out.push(')');
        Ok(())
    }

    /// Writes ` PART` per f-string part; literal text accumulates in `text` so
    /// adjacent pieces merge, and empty text is dropped.
    fn fstring_elements(
        &mut self,
        elements: &'a [InterpolatedStringElement],
        raw: bool,
        text: &mut PyText,
        out: &mut String,
    ) -> Render {
        for element in elements {
            match element {
                InterpolatedStringElement::Literal(lit) => {
                    self.push_literal(text, &lit.value, raw, lit.range, true);
                }
                InterpolatedStringElement::Interpolation(field) => {
                    if let Some(debug) = &field.debug_text {
                        text.push_str(debug.as_str());
                    }
                    flush_text(text, out);
                    out.push_str(" (fv ");
                    self.expr(&field.expression, out)?;
                    let conversion = match field.conversion {
                        ConversionFlag::Repr => Some("!r"),
                        ConversionFlag::Str => Some("!s"),
                        ConversionFlag::Ascii => Some("!a"),
                        ConversionFlag::None
                            if field.debug_text.is_some() && field.format_spec.is_none() =>
                        {
                            Some("!r")
                        }
                        ConversionFlag::None => None,
                    };
                    if let Some(conversion) = conversion {
                        out.push(' ');
                        out.push_str(conversion);
                    }
                    if let Some(spec) = &field.format_spec {
                        let mut parts = String::new();
                        let mut spec_text = PyText::default();
                        self.fstring_elements(&spec.elements, raw, &mut spec_text, &mut parts)?;
                        flush_text(&mut spec_text, &mut parts);
                        if !parts.is_empty() {
                            out.push_str(" (spec");
                            out.push_str(&parts);
                            out.push(')');
                        }
                    }
                    out.push(')');
                }
            }
        }
        Ok(())
    }

    /// Template strings (Python 3.14) have no canonical form yet (docs/surface.md
    /// §6.7); this renders CPython's `TemplateStr` fields on a best-effort basis.
    fn tstring(&mut self, node: &'a ast::ExprTString, out: &mut String) -> Render {
        out.push_str("(?TemplateStr (values (");
        let mut first = true;
        for t in node.value.iter() {
            let raw = t.flags.prefix().is_raw();
            for element in &t.elements {
                if !first {
                    out.push(' ');
                }
                first = false;
                match element {
                    InterpolatedStringElement::Literal(lit) => {
                        let mut text = PyText::default();
                        self.push_literal(&mut text, &lit.value, raw, lit.range, true);
                        text.write_json(out);
                    }
                    InterpolatedStringElement::Interpolation(field) => {
                        out.push_str("(?Interpolation (value ");
                        self.expr(&field.expression, out)?;
                        out.push_str(") (str ");
                        let src = self
                            .source
                            .get(
                                field.expression.range().start().to_usize()
                                    ..field.expression.range().end().to_usize(),
                            )
                            .unwrap_or("");
                        literal::write_json_str(out, src);
                        out.push_str(") (conversion ");
                        out.push_str(
                            &field
                                .conversion
                                .to_byte()
                                .map_or_else(|| "-1".to_owned(), |b| b.to_string()),
                        );
                        out.push_str(") (format_spec None))");
                    }
                }
            }
        }
        out.push_str(")))");
        Ok(())
    }

    // -- parameters, headers -----------------------------------------------------

    /// Renders a parameter list `(P...)` (docs/surface.md §6.6).
    pub(crate) fn params(&mut self, params: Option<&'a Parameters>, out: &mut String) -> Render {
        out.push('(');
        let Some(p) = params else {
            out.push(')');
            return Ok(());
        };
        let mut sep = Sep::default();
        for (i, param) in p.posonlyargs.iter().chain(p.args.iter()).enumerate() {
            sep.next(out);
            self.param(
                "",
                param.parameter.name.id.as_str(),
                running(param.parameter.annotation.as_deref()),
                param.default.as_deref(),
                out,
            )?;
            if i + 1 == p.posonlyargs.len() {
                out.push_str(" /");
            }
        }
        if let Some(vararg) = &p.vararg {
            sep.next(out);
            let annotation = running(vararg.annotation.as_deref());
            self.param("*", vararg.name.id.as_str(), annotation, None, out)?;
        } else if !p.kwonlyargs.is_empty() {
            sep.next(out);
            out.push('*');
        }
        for param in &p.kwonlyargs {
            sep.next(out);
            self.param(
                "",
                param.parameter.name.id.as_str(),
                running(param.parameter.annotation.as_deref()),
                param.default.as_deref(),
                out,
            )?;
        }
        if let Some(kwarg) = &p.kwarg {
            sep.next(out);
            let annotation = running(kwarg.annotation.as_deref());
            self.param("**", kwarg.name.id.as_str(), annotation, None, out)?;
        }
        out.push(')');
        Ok(())
    }

    fn param(
        &mut self,
        prefix: &str,
        name: &str,
        annotation: Option<&'a Expr>,
        default: Option<&'a Expr>,
        out: &mut String,
    ) -> Render {
        if annotation.is_none() && default.is_none() {
            out.push_str(prefix);
            out.push_str(name);
            return Ok(());
        }
        out.push('(');
        out.push_str(prefix);
        out.push_str(name);
        if let Some(annotation) = annotation {
            out.push_str(" : ");
            self.expr(annotation, out)?;
        }
        if let Some(default) = default {
            out.push_str(" = ");
            self.expr(default, out)?;
        }
        out.push(')');
        Ok(())
    }

    /// Writes ` (tparams TP...)` when there are type parameters.
    fn tparams(&mut self, tparams: Option<&'a TypeParams>, out: &mut String) -> Render {
        let Some(tparams) = tparams.filter(|t| !t.type_params.is_empty()) else {
            return Ok(());
        };
        out.push_str(" (tparams");
        for tp in &tparams.type_params {
            out.push(' ');
            match tp {
                TypeParam::TypeVar(t) => self.param(
                    "",
                    t.name.id.as_str(),
                    t.bound.as_deref(),
                    t.default.as_deref(),
                    out,
                )?,
                TypeParam::TypeVarTuple(t) => {
                    self.param("*", t.name.id.as_str(), None, t.default.as_deref(), out)?
                }
                TypeParam::ParamSpec(t) => {
                    self.param("**", t.name.id.as_str(), None, t.default.as_deref(), out)?
                }
            }
        }
        out.push(')');
        Ok(())
    }

    /// The header of a definition, without parentheses: `def NAME [TP] (P...)`.
    pub(crate) fn head(&mut self, def: Def<'a>, out: &mut String) -> Render {
        match def {
            Def::Func(f) => {
                out.push_str(if f.is_async { "async-def " } else { "def " });
                out.push_str(f.name.id.as_str());
                self.tparams(f.type_params.as_deref(), out)?;
                out.push(' ');
                self.params(Some(&f.parameters), out)?;
                if let Some(returns) = running(f.returns.as_deref()) {
                    out.push(' ');
                    self.join("->", [returns], out)?;
                }
            }
            Def::Class(c) => {
                out.push_str("class ");
                out.push_str(c.name.id.as_str());
                self.tparams(c.type_params.as_deref(), out)?;
                out.push_str(" (");
                let mut args = String::new();
                if let Some(arguments) = &c.arguments {
                    self.arguments(&arguments.args, &arguments.keywords, &mut args)?;
                }
                out.push_str(args.strip_prefix(' ').unwrap_or(&args));
                out.push(')');
            }
        }
        Ok(())
    }

    /// `(decorator E)`.
    pub(crate) fn decorator_entry(
        &mut self,
        decorator: &'a ast::Decorator,
        out: &mut String,
    ) -> Render {
        self.join("decorator", [&decorator.expression], out)
    }

    /// `(W...)`: each with-item as `E` or `(as E V)`.
    pub(crate) fn with_items(&mut self, items: &'a [ast::WithItem], out: &mut String) -> Render {
        out.push('(');
        let mut sep = Sep::default();
        for item in items {
            sep.next(out);
            match &item.optional_vars {
                None => self.expr(&item.context_expr, out)?,
                Some(vars) => self.join("as", [&item.context_expr, &**vars], out)?,
            }
        }
        out.push(')');
        Ok(())
    }

    /// `(except T N)` without the closing parenthesis, so a body can follow.
    fn handler_open(
        &mut self,
        handler: &'a ast::ExceptHandlerExceptHandler,
        tag: &str,
        out: &mut String,
    ) -> Render {
        out.push('(');
        out.push_str(tag);
        out.push(' ');
        self.opt(handler.type_.as_deref(), out)?;
        out.push(' ');
        out.push_str(handler.name.as_ref().map_or("()", |n| n.id.as_str()));
        Ok(())
    }

    // -- statements ------------------------------------------------------------

    /// Renders a whole statement (docs/surface.md §6.5).
    pub(crate) fn stmt(&mut self, stmt: &'a Stmt, out: &mut String) -> Render {
        if let Stmt::If(i) = stmt {
            let view = IfView {
                test: &i.test,
                body: &i.body,
                rest: &i.elif_else_clauses,
            };
            return self.if_stmt(view, out);
        }
        self.enter()?;
        self.stmt_inner(stmt, out)?;
        self.leave();
        Ok(())
    }

    /// Renders an `if` given as an [`IfView`] (an `elif` seen as CPython nests it).
    pub(crate) fn if_stmt(&mut self, view: IfView<'a>, out: &mut String) -> Render {
        self.enter()?;
        out.push_str("(if ");
        self.expr(view.test, out)?;
        out.push(' ');
        self.body(view.body, out)?;
        out.push(' ');
        match view.orelse() {
            Orelse::Body(stmts) => self.body(stmts, out)?,
            Orelse::Elif(inner) => {
                out.push('(');
                self.if_stmt(inner, out)?;
                out.push(')');
            }
        }
        out.push(')');
        self.leave();
        Ok(())
    }

    /// `(S...)`.
    fn body(&mut self, stmts: &'a [Stmt], out: &mut String) -> Render {
        out.push('(');
        let mut sep = Sep::default();
        for s in stmts {
            sep.next(out);
            self.stmt(s, out)?;
        }
        out.push(')');
        Ok(())
    }

    fn stmt_inner(&mut self, stmt: &'a Stmt, out: &mut String) -> Render {
        match stmt {
            Stmt::Assert(a) => self.join(
                "assert",
                std::iter::once(&*a.test).chain(a.msg.as_deref()),
                out,
            )?,
            Stmt::Expr(e) => self.join("expr", [&*e.value], out)?,
            Stmt::Assign(a) => {
                self.join("=", a.targets.iter().chain(std::iter::once(&*a.value)), out)?
            }
            Stmt::AugAssign(a) => {
                out.push('(');
                out.push_str(operator(a.op));
                out.push_str("= ");
                self.expr(&a.target, out)?;
                out.push(' ');
                self.expr(&a.value, out)?;
                out.push(')');
            }
            // Python never evaluates a local variable's annotation: `x: int = v` is `x = v`.
            Stmt::AnnAssign(a) if self.in_function => match a.value.as_deref() {
                Some(value) => self.join("=", [&*a.target, value], out)?,
                None => self.join("ann", [&*a.target], out)?,
            },
            Stmt::AnnAssign(a) => self.join(
                "ann",
                [&*a.target, &*a.annotation]
                    .into_iter()
                    .chain(a.value.as_deref()),
                out,
            )?,
            Stmt::Return(r) => self.join("return", r.value.as_deref(), out)?,
            Stmt::Delete(d) => self.join("del", &d.targets, out)?,
            Stmt::Pass(_) => out.push_str("(pass)"),
            Stmt::Break(_) => out.push_str("(break)"),
            Stmt::Continue(_) => out.push_str("(continue)"),
            Stmt::Raise(r) => self.join(
                "raise",
                r.exc.as_deref().into_iter().chain(r.cause.as_deref()),
                out,
            )?,
            Stmt::Global(g) => join_names(out, "global", g.names.iter().map(|n| n.id.as_str())),
            Stmt::Nonlocal(n) => join_names(out, "nonlocal", n.names.iter().map(|n| n.id.as_str())),
            Stmt::Import(i) => {
                out.push_str("(import");
                for alias in &i.names {
                    out.push(' ');
                    push_alias(out, alias);
                }
                out.push(')');
            }
            Stmt::ImportFrom(i) => {
                out.push_str("(from ");
                for _ in 0..i.level {
                    out.push('.');
                }
                if let Some(module) = &i.module {
                    out.push_str(module.id.as_str());
                }
                for alias in &i.names {
                    out.push(' ');
                    push_alias(out, alias);
                }
                out.push(')');
            }
            // Rendered by `if_stmt`, which `stmt` calls before getting here.
            Stmt::If(_) => {}
            Stmt::While(w) => {
                out.push_str("(while ");
                self.expr(&w.test, out)?;
                out.push(' ');
                self.body(&w.body, out)?;
                out.push(' ');
                self.body(&w.orelse, out)?;
                out.push(')');
            }
            Stmt::For(f) => {
                out.push_str(if f.is_async { "(async-for " } else { "(for " });
                self.expr(&f.target, out)?;
                out.push(' ');
                self.expr(&f.iter, out)?;
                out.push(' ');
                self.body(&f.body, out)?;
                out.push(' ');
                self.body(&f.orelse, out)?;
                out.push(')');
            }
            Stmt::With(w) => {
                out.push_str(if w.is_async { "(async-with " } else { "(with " });
                self.with_items(&w.items, out)?;
                out.push(' ');
                self.body(&w.body, out)?;
                out.push(')');
            }
            Stmt::Try(t) => {
                let (tag, handler_tag) = if t.is_star {
                    ("(try* ", "except*")
                } else {
                    ("(try ", "except")
                };
                out.push_str(tag);
                self.body(&t.body, out)?;
                out.push_str(" (");
                let mut sep = Sep::default();
                for handler in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = handler;
                    sep.next(out);
                    self.handler_open(h, handler_tag, out)?;
                    out.push(' ');
                    self.body(&h.body, out)?;
                    out.push(')');
                }
                out.push_str(") ");
                self.body(&t.orelse, out)?;
                out.push(' ');
                self.body(&t.finalbody, out)?;
                out.push(')');
            }
            Stmt::Match(m) => {
                out.push_str("(match ");
                self.expr(&m.subject, out)?;
                for case in &m.cases {
                    out.push_str(" (case ");
                    self.pattern(&case.pattern, out)?;
                    self.spaced(case.guard.as_deref(), out)?;
                    out.push(' ');
                    self.body(&case.body, out)?;
                    out.push(')');
                }
                out.push(')');
            }
            Stmt::FunctionDef(f) => self.def_stmt(Def::Func(f), out)?,
            Stmt::ClassDef(c) => self.def_stmt(Def::Class(c), out)?,
            Stmt::TypeAlias(t) => {
                out.push_str("(type ");
                self.expr(&t.name, out)?;
                self.tparams(t.type_params.as_deref(), out)?;
                out.push(' ');
                self.expr(&t.value, out)?;
                out.push(')');
            }
            Stmt::IpyEscapeCommand(_) => out.push_str("(?IpyEscapeCommand)"),
        }
        Ok(())
    }

    fn def_stmt(&mut self, def: Def<'a>, out: &mut String) -> Render {
        out.push('(');
        self.head(def, out)?;
        for decorator in def.decorators() {
            out.push(' ');
            self.decorator_entry(decorator, out)?;
        }
        out.push(' ');
        let function = matches!(def, Def::Func(_));
        self.in_scope(function, |p| p.body(strip_docstring(def.body()), out))?;
        out.push(')');
        Ok(())
    }

    // -- patterns --------------------------------------------------------------

    /// Renders a `match` pattern.
    pub(crate) fn pattern(&mut self, pattern: &'a Pattern, out: &mut String) -> Render {
        self.enter()?;
        match pattern {
            Pattern::MatchValue(v) => self.join("pvalue", [&*v.value], out)?,
            Pattern::MatchSingleton(s) => out.push_str(match s.value {
                Singleton::None => "(psingleton None)",
                Singleton::True => "(psingleton True)",
                Singleton::False => "(psingleton False)",
            }),
            Pattern::MatchSequence(s) => self.patterns("pseq", &s.patterns, out)?,
            Pattern::MatchMapping(m) => {
                out.push_str("(pmap");
                for (key, p) in m.keys.iter().zip(m.patterns.iter()) {
                    out.push_str(" (: ");
                    self.expr(key, out)?;
                    out.push(' ');
                    self.pattern(p, out)?;
                    out.push(')');
                }
                if let Some(rest) = &m.rest {
                    out.push_str(" (rest ");
                    out.push_str(rest.id.as_str());
                    out.push(')');
                }
                out.push(')');
            }
            Pattern::MatchClass(c) => {
                out.push_str("(pclass ");
                self.expr(&c.cls, out)?;
                out.push_str(" (");
                let mut sep = Sep::default();
                for p in &c.arguments.patterns {
                    sep.next(out);
                    self.pattern(p, out)?;
                }
                out.push_str(") (");
                let mut sep = Sep::default();
                for kw in &c.arguments.keywords {
                    sep.next(out);
                    out.push_str("(= ");
                    out.push_str(kw.attr.id.as_str());
                    out.push(' ');
                    self.pattern(&kw.pattern, out)?;
                    out.push(')');
                }
                out.push_str("))");
            }
            Pattern::MatchStar(s) => match &s.name {
                Some(name) => {
                    out.push_str("(pstar ");
                    out.push_str(name.id.as_str());
                    out.push(')');
                }
                None => out.push_str("(pstar)"),
            },
            Pattern::MatchAs(a) => {
                out.push_str("(pas ");
                match &a.pattern {
                    Some(p) => self.pattern(p, out)?,
                    None => out.push_str("()"),
                }
                out.push(' ');
                out.push_str(a.name.as_ref().map_or("()", |n| n.id.as_str()));
                out.push(')');
            }
            Pattern::MatchOr(o) => self.patterns("por", &o.patterns, out)?,
        }
        self.leave();
        Ok(())
    }

    fn patterns(&mut self, head: &str, patterns: &'a [Pattern], out: &mut String) -> Render {
        out.push('(');
        out.push_str(head);
        for p in patterns {
            out.push(' ');
            self.pattern(p, out)?;
        }
        out.push(')');
        Ok(())
    }
}

/// Writes a separating space before every item but the first.
#[derive(Default)]
struct Sep(bool);

impl Sep {
    fn next(&mut self, out: &mut String) {
        if self.0 {
            out.push(' ');
        }
        self.0 = true;
    }
}

fn flush_text(text: &mut PyText, out: &mut String) {
    if !text.is_empty() {
        out.push(' ');
        text.write_json(out);
    }
    *text = PyText::default();
}

fn join_names<'n>(out: &mut String, head: &str, names: impl Iterator<Item = &'n str>) {
    out.push('(');
    out.push_str(head);
    for name in names {
        out.push(' ');
        out.push_str(name);
    }
    out.push(')');
}

fn push_alias(out: &mut String, alias: &ast::Alias) {
    match &alias.asname {
        None => out.push_str(alias.name.id.as_str()),
        Some(asname) => {
            out.push_str("(as ");
            out.push_str(alias.name.id.as_str());
            out.push(' ');
            out.push_str(asname.id.as_str());
            out.push(')');
        }
    }
}

/// A body without its leading docstring: a first statement that is a plain string.
pub(crate) fn strip_docstring(body: &[Stmt]) -> &[Stmt] {
    match body.split_first() {
        Some((Stmt::Expr(e), rest)) if e.value.is_string_literal_expr() => rest,
        _ => body,
    }
}

fn operator(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "**",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

fn cmp_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::NotEq => "!=",
        CmpOp::Lt => "<",
        CmpOp::LtE => "<=",
        CmpOp::Gt => ">",
        CmpOp::GtE => ">=",
        CmpOp::Is => "is",
        CmpOp::IsNot => "is-not",
        CmpOp::In => "in",
        CmpOp::NotIn => "not-in",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_parser::parse_module;

    type TestResult = Result<(), String>;

    /// Renders the first statement of `source`.
    fn render(source: &str) -> Result<String, String> {
        let parsed = parse_module(source).map_err(|e| e.to_string())?;
        let stmt = parsed.syntax().body.first().ok_or("no statement")?;
        let mut printer = Printer::new(source);
        Ok(printer.frag(|p, out| p.stmt(stmt, out)))
    }

    fn check(source: &str, want: &str) -> TestResult {
        let got = render(source)?;
        if got == want {
            Ok(())
        } else {
            Err(format!("{source:?}: got {got:?}, want {want:?}"))
        }
    }

    #[test]
    fn expressions_render_as_in_the_spec() -> TestResult {
        check(
            "assert 0b1_0 == 2 != 'x' \"y\" == b\"\\xff\"\n",
            r#"(assert (cmp 2 == 2 != "xy" == b"\xff"))"#,
        )?;
        check(
            "f(a, *b, k=c, **d)\n",
            "(expr (call f a (star b) (= k c) (dstar d)))",
        )?;
        check("x[::2]\n", "(expr (sub x (slice () () 2)))")?;
        check("(a and b) and c or d\n", "(expr (or (and a b c) d))")?;
        check("lambda x, y=1: b\n", "(expr (lambda (x (y = 1)) b))")?;
        check("f().a.b\n", "(expr (. (. (call f) a) b))")?;
        check("{k: v, **m}\n", "(expr (dict (: k v) (dstar m)))")?;
        check("[e for x in xs if c]\n", "(expr (listcomp e (for x xs c)))")?;
        check("-1\n", "(expr (neg 1))")
    }

    #[test]
    fn fstrings_merge_text_and_expand_debug_fields() -> TestResult {
        check(
            "f'{x!r:>{w}}'\n",
            r#"(expr (fstr (fv x !r (spec ">" (fv w)))))"#,
        )?;
        check("f'{x:}'\n", "(expr (fstr (fv x)))")?;
        check("f''\n", "(expr (fstr))")?;
        check("'a' f'{y}' 'b'\n", r#"(expr (fstr "a" (fv y) "b"))"#)?;
        check("f'{ x = }'\n", r#"(expr (fstr " x = " (fv x !r)))"#)
    }

    #[test]
    fn lone_surrogates_survive() -> TestResult {
        check("'\\ud800' '\\udc00x'\n", r#"(expr "\ud800\udc00x")"#)?;
        check("f'\\ud83d{x}'\n", r#"(expr (fstr "\ud83d" (fv x)))"#)
    }

    #[test]
    fn statements_and_patterns() -> TestResult {
        check(
            "if a:\n    pass\nelif b:\n    x = 1\nelse:\n    y += 2\n",
            "(if a ((pass)) ((if b ((= x 1)) ((+= y 2)))))",
        )?;
        check(
            "try:\n    pass\nexcept E as e:\n    raise\nfinally:\n    pass\n",
            "(try ((pass)) ((except E e ((raise)))) () ((pass)))",
        )?;
        check(
            "match c:\n    case {'a': [1, *r]} | None if r:\n        pass\n",
            r#"(match c (case (por (pmap (: "a" (pseq (pvalue 1) (pstar r)))) (psingleton None)) r ((pass))))"#,
        )?;
        check(
            "@d\nasync def f(p, /, q: int = 1, *a, k, **kw) -> None:\n    '''doc'''\n    pass\n",
            "(async-def f (p / (q = 1) *a k **kw) (decorator d) ((pass)))",
        )?;
        check(
            "def f():\n    x: int = 1\n    y: int\n    class C:\n        z: int = 2\n",
            "(def f () ((= x 1) (ann y) (class C () ((ann z int 2)))))",
        )?;
        check(
            "class C(B, metaclass=M):\n    pass\n",
            "(class C (B (= metaclass M)) ((pass)))",
        )?;
        check("from ..m import x, y as z\n", "(from ..m x (as y z))")
    }

    #[test]
    fn rendering_stops_one_level_past_the_limit() -> TestResult {
        let ok = render(&format!("{}x\n", "-".repeat(MAX_DEPTH - 1)))?;
        if !ok.ends_with(&format!("(neg x{}", ")".repeat(MAX_DEPTH))) {
            return Err(ok);
        }
        let deep = render(&format!("{}x\n", "-".repeat(MAX_DEPTH + 5)))?;
        if deep == "(".repeat(MAX_DEPTH + 1) {
            Ok(())
        } else {
            Err(deep)
        }
    }
}
