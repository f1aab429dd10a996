//! The `oracle_gate(...)` calls of a BUILD file, read as the static reader reads them.
//!
//! `python/oracle_gate/bazel/read/` reads a gate call symbolically, and
//! `config/matrix.py` turns it into a matrix, with messages that name lines. This
//! module gives the same values for the calls written plainly (literals, lists,
//! dicts, `+`, `glob()`, `invariant(...)` calls), so the Python side need not parse
//! the file again. Anything else (a name, a comprehension, `select()`, an escaped
//! or triple-quoted string, a parenthesised value) gives `None`, and the caller
//! parses the file with the static reader, whose reading is the reference.

use starlark::syntax::ast::{ArgumentP, AstExpr, AstLiteral, AstStmt, BinOp, Expr, Stmt};
use starlark::syntax::AstModule;

/// A value as the static reader's `Value`: a Starlark list is a Python tuple.
#[derive(Debug, Clone, PartialEq)]
pub enum GateValue {
    Str(String),
    Int(i64),
    Bool(bool),
    None,
    List(Vec<GateValue>),
    Dict(Vec<(String, GateValue)>),
    Call(GateCall),
    Glob {
        include: Vec<String>,
        exclude: Vec<String>,
        exclude_directories: bool,
        line: usize,
    },
}

/// A call as the static reader's `Call`: the function as written, 1-based lines.
#[derive(Debug, Clone, PartialEq)]
pub struct GateCall {
    pub function: String,
    pub line: usize,
    pub args: Vec<GateValue>,
    /// (name, value, line of the value)
    pub kwargs: Vec<(String, GateValue, usize)>,
}

/// What the static reader needs of a file that declares a gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Gates {
    pub calls: Vec<GateCall>,
    /// `invariant` and every name a `load()` binds to it.
    pub invariant_names: Vec<String>,
}

/// The function a BUILD file declares its gate with, as `rules/defs.bzl` exports it.
pub const GATE_FUNCTION: &str = "oracle_gate";
const INVARIANT_FUNCTION: &str = "invariant";

/// The top-level statements of `ast`.
pub fn top_level(ast: &AstModule) -> &[AstStmt] {
    match &ast.statement().node {
        Stmt::Statements(all) => all,
        _ => std::slice::from_ref(ast.statement()),
    }
}

/// The names a `load()` binds to `exported` (`exported` itself always counts).
pub fn bound_names<'a>(ast: &'a AstModule, exported: &'a str) -> Vec<&'a str> {
    let mut names = vec![exported];
    for load in ast.loads() {
        for (local, name) in load.symbols.iter() {
            if *name == exported && !names.contains(local) {
                names.push(local);
            }
        }
    }
    names
}

/// The gate calls of `ast`, or `None` when one is not written plainly enough.
pub fn read_gates(ast: &AstModule) -> Option<Gates> {
    let gate_names = bound_names(ast, GATE_FUNCTION);
    let reader = Reader { ast };
    let mut calls = Vec::new();
    for statement in top_level(ast) {
        let Stmt::Expression(expression) = &statement.node else {
            continue;
        };
        let Expr::Call(function, _) = &expression.node else {
            continue;
        };
        if let Expr::Identifier(name) = &function.node {
            if gate_names.contains(&name.node.ident.as_str()) {
                match reader.value(expression)? {
                    GateValue::Call(call) => calls.push(call),
                    _ => return None,
                }
            }
        }
    }
    let mut invariant_names: Vec<String> = bound_names(ast, INVARIANT_FUNCTION)
        .into_iter()
        .map(str::to_owned)
        .collect();
    invariant_names.sort();
    Some(Gates {
        calls,
        invariant_names,
    })
}

struct Reader<'a> {
    ast: &'a AstModule,
}

impl Reader<'_> {
    fn line(&self, expression: &AstExpr) -> usize {
        self.ast
            .file_span(expression.span)
            .resolve_span()
            .begin
            .line
            + 1
    }

    fn source(&self, expression: &AstExpr) -> String {
        self.ast.file_span(expression.span).source_span().to_owned()
    }

    fn value(&self, expression: &AstExpr) -> Option<GateValue> {
        // Python dates a parenthesised value from inside the parentheses; not worth guessing.
        if self.source(expression).starts_with('(') {
            return None;
        }
        match &expression.node {
            Expr::Literal(AstLiteral::String(text)) => {
                let written = self.source(expression);
                let plain = (written.starts_with('"') || written.starts_with('\''))
                    && !written.contains('\\')
                    && !written.starts_with("\"\"\"")
                    && !written.starts_with("'''");
                plain.then(|| GateValue::Str(text.node.clone()))
            }
            Expr::Literal(AstLiteral::Int(_)) => {
                let written = self.source(expression);
                let decimal = written.bytes().all(|b| b.is_ascii_digit())
                    && (written == "0" || !written.starts_with('0'));
                decimal
                    .then(|| written.parse().ok().map(GateValue::Int))
                    .flatten()
            }
            Expr::Identifier(name) => match name.node.ident.as_str() {
                "True" => Some(GateValue::Bool(true)),
                "False" => Some(GateValue::Bool(false)),
                "None" => Some(GateValue::None),
                _ => None,
            },
            Expr::List(items) => items
                .iter()
                .map(|item| self.value(item))
                .collect::<Option<Vec<_>>>()
                .map(GateValue::List),
            Expr::Dict(entries) => entries
                .iter()
                .map(|(key, value)| match self.value(key)? {
                    GateValue::Str(key) => Some((key, self.value(value)?)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(GateValue::Dict),
            Expr::Op(left, BinOp::Add, right) => match (self.value(left)?, self.value(right)?) {
                (GateValue::List(mut left), GateValue::List(right)) => {
                    left.extend(right);
                    Some(GateValue::List(left))
                }
                (GateValue::Str(left), GateValue::Str(right)) => {
                    Some(GateValue::Str(left + &right))
                }
                _ => None,
            },
            Expr::Call(function, arguments) => self.call(expression, function, &arguments.args),
            _ => None,
        }
    }

    fn call(
        &self,
        expression: &AstExpr,
        function: &AstExpr,
        arguments: &[starlark::syntax::ast::AstArgument],
    ) -> Option<GateValue> {
        let name = function_name(function)?;
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        for argument in arguments {
            match &argument.node {
                ArgumentP::Positional(value) => args.push(self.value(value)?),
                ArgumentP::Named(key, value) => {
                    kwargs.push((key.node.clone(), self.value(value)?, self.line(value)))
                }
                ArgumentP::Args(_) | ArgumentP::KwArgs(_) => return None,
            }
        }
        let line = self.line(expression);
        match name.as_str() {
            "glob" | "native.glob" => glob(&args, &kwargs, line),
            "select" | "native.select" => None,
            _ => Some(GateValue::Call(GateCall {
                function: name,
                line,
                args,
                kwargs,
            })),
        }
    }
}

/// `glob(include, exclude, exclude_directories = 1)` as one `Glob` in a list.
fn glob(
    args: &[GateValue],
    kwargs: &[(String, GateValue, usize)],
    line: usize,
) -> Option<GateValue> {
    let keyword = |key: &str| kwargs.iter().find(|(k, _, _)| k == key).map(|(_, v, _)| v);
    let empty = GateValue::List(Vec::new());
    let include = args
        .first()
        .or_else(|| keyword("include"))
        .unwrap_or(&empty);
    let exclude = args.get(1).or_else(|| keyword("exclude")).unwrap_or(&empty);
    let exclude_directories = match keyword("exclude_directories") {
        None => true,
        Some(GateValue::Int(n)) => *n != 0,
        Some(GateValue::Bool(b)) => *b,
        Some(_) => return None,
    };
    Some(GateValue::List(vec![GateValue::Glob {
        include: strings(include)?,
        exclude: strings(exclude)?,
        exclude_directories,
        line,
    }]))
}

fn strings(value: &GateValue) -> Option<Vec<String>> {
    let GateValue::List(items) = value else {
        return None;
    };
    items
        .iter()
        .map(|item| match item {
            GateValue::Str(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// `name` or `a.b.name`, as the static reader names a called function.
fn function_name(function: &AstExpr) -> Option<String> {
    match &function.node {
        Expr::Identifier(name) => Some(name.node.ident.clone()),
        Expr::Dot(base, attribute) => Some(format!("{}.{}", function_name(base)?, attribute.node)),
        _ => None,
    }
}
