//! A BUILD file written plainly, read without running the interpreter.
//!
//! Most BUILD files of a monorepo are a few `load()`s from rule sets that are
//! not in the tree and calls of the rules they bind, with literal arguments:
//! strings, lists, dicts, `glob()`, `select()` and `+`. For such a file the
//! records the interpreter would make are known from the syntax tree alone, and
//! compiling and running it (most of the cost of a cold graph) is skipped.
//! Anything else (an assignment, a name, a macro of the tree's own `.bzl` files,
//! `*args`, an operator other than `+` on lists and selects) returns `None`, and
//! the file is evaluated in full. `tests/test_plain_builds.py` holds the two
//! readings to the same records on generated files.

use std::collections::{HashMap, HashSet};

use starlark::syntax::ast::{ArgumentP, AstExpr, AstLiteral, BinOp, Expr, Stmt};
use starlark::syntax::AstModule;

use super::gate::top_level;
use super::values::{argument_role, collect_in_role, unlike_bazel_char, Record, Role};

/// A value as far as records go (`values::strings_of`).
enum Plain {
    Str(String),
    List(Vec<Plain>),
    Tuple(Vec<Plain>),
    Dict(Vec<(Plain, Plain)>),
    /// What `select()` or an opaque call returns: the label-like strings it holds.
    Strings(Vec<String>),
    /// A number, a bool, None, or a rule's result: no strings.
    Nothing,
}

impl Plain {
    /// `values::strings_in_role` on the value the interpreter would hold.
    fn strings_in_role(&self, role: Role, out: &mut Vec<String>) {
        collect_in_role(role, out, |out| self.strings(out));
    }

    /// `values::strings_of` on the value the interpreter would hold.
    fn strings(&self, out: &mut Vec<String>) {
        match self {
            Plain::Str(text) => {
                if text.starts_with("//") || text.starts_with('@') {
                    out.push(text.clone());
                }
            }
            Plain::List(items) | Plain::Tuple(items) => items.iter().for_each(|i| i.strings(out)),
            Plain::Dict(entries) => entries.iter().for_each(|(key, value)| {
                key.strings(out);
                value.strings(out);
            }),
            Plain::Strings(strings) => out.extend(strings.iter().cloned()),
            Plain::Nothing => {}
        }
    }
}

/// The records of `ast`'s rule calls, when the file is plain. `opaque` gives the origin
/// of each name the loads bind (`@rules_go//go:def.bzl%go_library`), all from
/// repositories not in the tree; a call of a name nothing defines is a rule's.
pub fn plain_records(
    ast: &AstModule,
    path: &str,
    opaque: &HashMap<String, String>,
    globals: &HashSet<String>,
) -> Option<Vec<Record>> {
    let mut reader = Reader {
        ast,
        path,
        opaque,
        globals,
        records: Vec::new(),
    };
    for statement in top_level(ast) {
        match &statement.node {
            Stmt::Load(_) => {}
            // A docstring.
            Stmt::Expression(expression)
                if matches!(expression.node, Expr::Literal(AstLiteral::String(_))) => {}
            Stmt::Expression(expression) if matches!(expression.node, Expr::Call(..)) => {
                reader.value(expression)?;
            }
            _ => return None,
        }
    }
    Some(reader.records)
}

struct Reader<'a> {
    ast: &'a AstModule,
    path: &'a str,
    opaque: &'a HashMap<String, String>,
    globals: &'a HashSet<String>,
    records: Vec<Record>,
}

impl Reader<'_> {
    fn value(&mut self, expression: &AstExpr) -> Option<Plain> {
        Some(match &expression.node {
            // What `eval.rs`'s `unmodelled` refuses is refused here too, so a file reads the
            // same either way: a float, a string Bazel holds as other bytes.
            Expr::Literal(AstLiteral::String(text)) if text.node.chars().any(unlike_bazel_char) => {
                return None
            }
            Expr::Literal(AstLiteral::String(text)) => Plain::Str(text.node.clone()),
            Expr::Literal(AstLiteral::Float(_)) => return None,
            Expr::Literal(AstLiteral::Int(_)) => Plain::Nothing,
            Expr::Identifier(name) => match name.node.ident.as_str() {
                "True" | "False" | "None" if !self.opaque.contains_key(&name.node.ident) => {
                    Plain::Nothing
                }
                _ => return None,
            },
            Expr::List(items) => Plain::List(self.values(items)?),
            Expr::Tuple(items) => Plain::Tuple(self.values(items)?),
            Expr::Dict(entries) => {
                let mut keys = HashSet::new();
                let mut found = Vec::with_capacity(entries.len());
                for (key, value) in entries {
                    let key = self.value(key)?;
                    // A repeated key is the interpreter's to report.
                    if !matches!(&key, Plain::Str(text) if keys.insert(text.clone())) {
                        return None;
                    }
                    found.push((key, self.value(value)?));
                }
                Plain::Dict(found)
            }
            Expr::Op(left, BinOp::Add, right) => {
                let (left, right) = (self.value(left)?, self.value(right)?);
                add(left, right)?
            }
            Expr::Call(function, arguments) => self.call(expression, function, &arguments.args)?,
            _ => return None,
        })
    }

    fn values(&mut self, items: &[AstExpr]) -> Option<Vec<Plain>> {
        items.iter().map(|item| self.value(item)).collect()
    }

    fn call(
        &mut self,
        expression: &AstExpr,
        function: &AstExpr,
        arguments: &[starlark::syntax::ast::AstArgument],
    ) -> Option<Plain> {
        let Expr::Identifier(name) = &function.node else {
            return None;
        };
        let name = name.node.ident.as_str();
        // Arguments are evaluated first, in order: a call among them records before this one.
        let mut positional = Vec::new();
        let mut named = Vec::new();
        for argument in arguments {
            match &argument.node {
                ArgumentP::Positional(value) => positional.push(self.value(value)?),
                ArgumentP::Named(key, value) => named.push((key.node.as_str(), self.value(value)?)),
                ArgumentP::Args(_) | ArgumentP::KwArgs(_) => return None,
            }
        }
        if !self.opaque.contains_key(name) && self.globals.contains(name) {
            return match name {
                "glob" => Some(Plain::List(Vec::new())),
                "select" => {
                    let mut strings = Vec::new();
                    positional
                        .iter()
                        .for_each(|value| value.strings(&mut strings));
                    Some(Plain::Strings(strings))
                }
                _ => None,
            };
        }
        let origin = self.opaque.get(name).map(String::as_str);
        if origin.is_none() && name == "Label" {
            return None;
        }
        let mut strings = Vec::new();
        // An opaque symbol may pass any argument on as a dependency.
        let role = |key: Option<&str>| match origin {
            Some(_) => Role::Dependency,
            None => argument_role(name, key),
        };
        positional
            .iter()
            .for_each(|value| value.strings_in_role(role(None), &mut strings));
        for (key, value) in &named {
            value.strings_in_role(role(Some(key)), &mut strings);
        }
        if !strings.is_empty() {
            let line = self
                .ast
                .file_span(expression.span)
                .resolve_span()
                .begin
                .line
                + 1;
            let location = format!("{}:{line}", self.path);
            self.records.extend(strings.iter().map(|label| Record {
                label: label.clone(),
                location: location.clone(),
                opaque: origin.unwrap_or_default().to_owned(),
            }));
        }
        Some(match origin {
            Some(_) => Plain::Strings(strings),
            None => Plain::Nothing,
        })
    }
}

/// `left + right` as the interpreter adds them, for lists, strings and `select()`s.
fn add(left: Plain, right: Plain) -> Option<Plain> {
    Some(match (left, right) {
        (Plain::List(mut left), Plain::List(right)) => {
            left.extend(right);
            Plain::List(left)
        }
        (Plain::Str(left), Plain::Str(right)) => Plain::Str(left + &right),
        (Plain::Strings(mut own), other @ (Plain::List(_) | Plain::Strings(_))) => {
            other.strings(&mut own);
            Plain::Strings(own)
        }
        // `[...] + select(...)`: the select adds the list to itself, its own strings first.
        (other @ Plain::List(_), Plain::Strings(mut own)) => {
            other.strings(&mut own);
            Plain::Strings(own)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use starlark::syntax::Dialect;

    fn read(content: &str) -> Option<Vec<(String, String, String)>> {
        let ast = AstModule::parse("p/BUILD", content.to_owned(), &Dialect::Extended).unwrap();
        let mut opaque = HashMap::new();
        opaque.insert(
            "go_library".to_owned(),
            "@rules_go//go:def.bzl%go_library".to_owned(),
        );
        let globals: HashSet<String> = ["glob", "select", "len"].map(str::to_owned).into();
        plain_records(&ast, "p/BUILD", &opaque, &globals).map(|records| {
            records
                .into_iter()
                .map(|r| (r.label, r.location, r.opaque))
                .collect()
        })
    }

    fn record(label: &str, line: usize, opaque: &str) -> (String, String, String) {
        (
            label.to_owned(),
            format!("p/BUILD:{line}"),
            opaque.to_owned(),
        )
    }

    #[test]
    fn plain_calls_are_read() {
        let go = "@rules_go//go:def.bzl%go_library";
        assert_eq!(
            read(
                "\"\"\"Doc.\"\"\"\ncc_library(\n    name = '//not',\n    deps = ['//a'] + select({'//c': ['//b']}),\n    visibility = ['//v'],\n)\n\
                 go_library(name = '//n', embed = [cc_library(deps = ['//in'])])\npackage(default_visibility = ['//p'])\n\
                 package_group(name = 'g', packages = ['//q/...'], includes = ['//r:g'])\n\
                 exports_files(['f'], visibility = ['//visibility:public', '//s:__pkg__'])\n"
            ),
            Some(vec![
                record("//c", 2, ""),
                record("//b", 2, ""),
                record("//a", 2, ""),
                record("//v", 2, ""),
                record("//in", 7, ""),
                record("//n", 7, go),
                record("//p", 8, ""),
                record("//r:g", 9, ""),
            ])
        );
    }

    #[test]
    fn anything_else_is_left_to_the_interpreter() {
        for content in [
            "X = ['//a']\ncc_library(deps = X)",
            "cc_library(deps = DEPS)",
            "cc_library(deps = ['//lib/%s' % n for n in ['a']])",
            "cc_library(**{'deps': ['//a']})",
            "len(['//a'])",
            "native.cc_library(deps = ['//a'])",
            "cc_library(deps = {'//a': 1, '//a': 2})",
            "cc_library(deps = [1] + ('//a',))",
            "Label('//a')",
            "def f():\n    pass\n",
        ] {
            assert_eq!(read(content), None, "{content}");
        }
    }
}
