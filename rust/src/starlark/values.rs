//! The Bazel builtins a BUILD or `.bzl` file calls, as Starlark values that record labels.
//!
//! Nothing here builds anything: a rule call records the label-like strings of
//! its arguments (a dependency on another package when Python resolves them),
//! `glob()` is empty (a glob never crosses a package), `select()` keeps every
//! branch and key, and a symbol from a repository that is not in the tree is
//! opaque: calling it records every label-like string it is given, flagged as an
//! over-approximation.

use std::cell::RefCell;
use std::fmt;

use allocative::Allocative;
use starlark::any::ProvidesStaticType;
use starlark::eval::{Arguments, Evaluator};
use starlark::starlark_simple_value;
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{starlark_value, Heap, NoSerialize, StarlarkValue, Value, ValueLike};

/// Attributes whose strings are not dependencies (bazel query does not follow them).
pub const NOT_DEPS: [&str; 5] = [
    "name",
    "visibility",
    "default_visibility",
    "tags",
    "licenses",
];
/// Calls whose arguments never name dependencies.
pub const NOT_RULES: [&str; 5] = ["package", "package_group", "licenses", "workspace", "load"];

/// One label-like string a rule call was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub label: String,
    /// `file:line` of the call that named it (a macro's line for a macro's rule).
    pub location: String,
    /// Empty for a real rule; otherwise the opaque symbol whose call named it.
    pub opaque: String,
}

/// What the evaluation of one file can reach through `Evaluator::extra`.
#[derive(ProvidesStaticType, Default)]
pub struct Context {
    /// The package the file's relative labels resolve against.
    pub package: String,
    pub records: RefCell<Vec<Record>>,
}

impl Context {
    fn of<'a>(eval: &'a Evaluator<'_, '_, '_>) -> Option<&'a Context> {
        eval.extra.and_then(|extra| extra.downcast_ref::<Context>())
    }
}

/// Every builtin and recorded value; one type keeps the Starlark plumbing in one place.
#[derive(Debug, Clone, ProvidesStaticType, NoSerialize, Allocative)]
pub enum Magic {
    /// A rule or macro nobody defined here (`cc_library`, `native.py_test`).
    Rule { kind: String, implicit: Vec<String> },
    /// A symbol loaded from a repository that is not in the tree, or what it returned.
    Opaque {
        origin: String,
        strings: Vec<String>,
    },
    /// `select({...})`: every key and branch, and whatever was added to it.
    Select { strings: Vec<String> },
    /// `attr.label(default = ...)` and friends: the default labels, absolute.
    Attr { labels: Vec<String> },
    /// The `native` and `attr` namespaces.
    Namespace { name: String },
    /// A builtin function, by name: glob, select, rule, package_name, ...
    Builtin { name: String },
    /// `Label(...)` as seen from one file's package.
    LabelFn { package: String },
}
starlark_simple_value!(Magic);

impl fmt::Display for Magic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Magic::Rule { kind, .. } => write!(f, "<rule {kind}>"),
            Magic::Opaque { origin, .. } => write!(f, "<opaque {origin}>"),
            Magic::Select { .. } => write!(f, "<select>"),
            Magic::Attr { .. } => write!(f, "<attr>"),
            Magic::Namespace { name } => write!(f, "<{name}>"),
            Magic::Builtin { name } => write!(f, "<built-in {name}>"),
            Magic::LabelFn { .. } => write!(f, "<Label>"),
        }
    }
}

/// Whether a string may name another package: an absolute label or its literal part.
fn label_like(text: &str) -> bool {
    text.starts_with("//") || text.starts_with('@')
}

/// Every label-like string inside `value`: lists, tuples, dict keys and values, selects.
pub fn strings_of(value: Value<'_>, out: &mut Vec<String>) {
    if let Some(text) = value.unpack_str() {
        if label_like(text) {
            out.push(text.to_owned());
        }
    } else if let Some(list) = ListRef::from_value(value) {
        list.iter().for_each(|item| strings_of(item, out));
    } else if let Some(tuple) = TupleRef::from_value(value) {
        tuple.iter().for_each(|item| strings_of(item, out));
    } else if let Some(dict) = DictRef::from_value(value) {
        for (key, item) in dict.iter() {
            strings_of(key, out);
            strings_of(item, out);
        }
    } else if let Some(magic) = value.downcast_ref::<Magic>() {
        match magic {
            Magic::Opaque { strings, .. } | Magic::Select { strings } => {
                out.extend(strings.iter().cloned())
            }
            Magic::Attr { labels } => out.extend(labels.iter().cloned()),
            _ => {}
        }
    }
}

/// `label` as written in `package`, made absolute (`:x` and `x` become `//package:x`).
pub fn absolute(label: &str, package: &str) -> String {
    if label_like(label) {
        label.to_owned()
    } else {
        format!("//{package}:{}", label.trim_start_matches(':'))
    }
}

fn location(eval: &Evaluator<'_, '_, '_>) -> String {
    eval.call_stack_top_location()
        .map(|span| {
            let line = span.resolve_span().begin.line + 1;
            format!("{}:{line}", span.filename())
        })
        .unwrap_or_default()
}

/// Records the label-like arguments of a rule call (all of them for an opaque one).
fn record_call<'v>(
    eval: &mut Evaluator<'v, '_, '_>,
    args: &Arguments<'v, '_>,
    kind: &str,
    opaque: &str,
    implicit: &[String],
) -> starlark::Result<Vec<String>> {
    let mut strings = Vec::new();
    if opaque.is_empty() && NOT_RULES.contains(&kind) {
        return Ok(strings);
    }
    for value in args.positions(eval.heap())? {
        strings_of(value, &mut strings);
    }
    for (name, value) in args.names_map()? {
        if opaque.is_empty() && NOT_DEPS.contains(&name.as_str()) {
            continue;
        }
        strings_of(value, &mut strings);
    }
    strings.extend(implicit.iter().cloned());
    if let Some(context) = Context::of(eval) {
        let at = location(eval);
        let mut records = context.records.borrow_mut();
        records.extend(strings.iter().map(|label| Record {
            label: label.clone(),
            location: at.clone(),
            opaque: opaque.to_owned(),
        }));
    }
    Ok(strings)
}

fn builtin<'v>(
    name: &str,
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let heap = eval.heap();
    let package = Context::of(eval)
        .map(|c| c.package.clone())
        .unwrap_or_default();
    Ok(match name {
        "glob" => heap.alloc(Vec::<Value>::new()),
        "select" => {
            let mut strings = Vec::new();
            for value in args.positions(heap)? {
                strings_of(value, &mut strings);
            }
            heap.alloc(Magic::Select { strings })
        }
        "package_name" => heap.alloc(package),
        "repository_name" => heap.alloc("@"),
        "existing_rules" => heap.alloc(starlark::values::dict::AllocDict::EMPTY),
        "existing_rule" => Value::new_none(),
        "rule" | "macro" => {
            let mut implicit = Vec::new();
            if let Some(attrs) = args.names_map()?.get("attrs") {
                strings_of(*attrs, &mut implicit);
            }
            heap.alloc(Magic::Rule {
                kind: name.to_owned(),
                implicit,
            })
        }
        _ => Value::new_none(),
    })
}

fn attr<'v>(
    name: &str,
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let mut labels = Vec::new();
    if name.starts_with("label") {
        if let Some(default) = args.names_map()?.get("default") {
            let package = Context::of(eval)
                .map(|c| c.package.clone())
                .unwrap_or_default();
            let mut found = Vec::new();
            collect_all_strings(*default, &mut found);
            labels = found
                .iter()
                .map(|label| absolute(label, &package))
                .collect();
        }
    }
    Ok(eval.heap().alloc(Magic::Attr { labels }))
}

/// Every string inside a default (relative labels included, resolved by the caller).
fn collect_all_strings(value: Value<'_>, out: &mut Vec<String>) {
    if let Some(text) = value.unpack_str() {
        out.push(text.to_owned());
    } else if let Some(list) = ListRef::from_value(value) {
        list.iter().for_each(|item| collect_all_strings(item, out));
    } else if let Some(dict) = DictRef::from_value(value) {
        dict.iter()
            .for_each(|(key, _)| collect_all_strings(key, out));
    }
}

#[starlark_value(type = "bazel_value")]
impl<'v> StarlarkValue<'v> for Magic {
    fn invoke(
        &self,
        _me: Value<'v>,
        args: &Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        match self {
            Magic::Rule { kind, implicit } => {
                record_call(eval, args, kind, "", implicit)?;
                Ok(Value::new_none())
            }
            Magic::Opaque { origin, .. } => {
                let strings = record_call(eval, args, origin, origin, &[])?;
                let origin = format!("{origin}()");
                Ok(eval.heap().alloc(Magic::Opaque { origin, strings }))
            }
            Magic::Builtin { name } => builtin(name, args, eval),
            Magic::Namespace { name } if name.starts_with("attr.") => attr(&name[5..], args, eval),
            Magic::LabelFn { package } => {
                let text = args.positional1(eval.heap())?;
                let label = absolute(text.unpack_str().unwrap_or_default(), package);
                Ok(eval.heap().alloc(label))
            }
            _ => Ok(Value::new_none()),
        }
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        match self {
            Magic::Namespace { name } if name == "native" => Some(heap.alloc(match attribute {
                "glob" | "select" | "package_name" | "repository_name" | "existing_rules"
                | "existing_rule" => Magic::Builtin {
                    name: attribute.to_owned(),
                },
                _ => Magic::Rule {
                    kind: attribute.to_owned(),
                    implicit: Vec::new(),
                },
            })),
            Magic::Namespace { name } if name == "attr" => Some(heap.alloc(Magic::Namespace {
                name: format!("attr.{attribute}"),
            })),
            Magic::Opaque { origin, strings } => Some(heap.alloc(Magic::Opaque {
                origin: format!("{origin}.{attribute}"),
                strings: strings.clone(),
            })),
            _ => None,
        }
    }

    fn has_attr(&self, attribute: &str, heap: Heap<'v>) -> bool {
        self.get_attr(attribute, heap).is_some()
    }

    fn add(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        self.combine(rhs, heap)
    }

    fn radd(&self, lhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        self.combine(lhs, heap)
    }

    fn to_bool(&self) -> bool {
        true
    }
}

impl Magic {
    /// `select(...) + [...]`, `OPAQUE + [...]`: every string of both sides is kept.
    fn combine<'v>(&self, other: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        let mut strings = Vec::new();
        match self {
            Magic::Select { strings: own } => strings.extend(own.iter().cloned()),
            Magic::Opaque { strings: own, .. } => strings.extend(own.iter().cloned()),
            _ => return None,
        }
        strings_of(other, &mut strings);
        Some(Ok(heap.alloc(match self {
            Magic::Opaque { origin, .. } => Magic::Opaque {
                origin: origin.clone(),
                strings,
            },
            _ => Magic::Select { strings },
        })))
    }
}
