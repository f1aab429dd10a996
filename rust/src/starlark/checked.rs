//! Operations that build strings, lists and numbers, checked before they run.
//!
//! starlark-rust checks its step and memory limits every thousand steps, and one
//! operation can take gigabytes in between (`s.replace("x", s)`, thirty `s = s + s`
//! in a row, which take no step at all). So the evaluator runs each file rewritten:
//! every binary operator but `and` and `or`, every call of a method of strings, lists
//! and dicts, every slice and every `+=`, `*=`, `%=` and `|=` goes through a function
//! here that says, before it runs, how long a value it builds, how much memory that
//! takes and how many items it reads (`limits.rs`). The builtins are checked where they
//! are called (`values::call_standard`, `check_builtin`). What each loop and
//! comprehension iterates over is counted before it runs: the interpreter stops only
//! long after, where it cannot say which line.
//!
//! The rewrite is of the source text, which starlark-rust lets no one change but its
//! binary operators: `r.replace(a, b)` becomes `__oracle_gate_method(r, "replace", a,
//! b)`, `r[1:]` becomes `__oracle_gate_sliced(r)[1:]`, `x += y` becomes `x +=
//! __oracle_gate_grows("+", x, y)`. Lines stay where they were, so errors name the
//! file's own lines. A file that uses the prefix itself is not run (`unmodelled`).

use std::fmt;

use allocative::Allocative;
use starlark::any::ProvidesStaticType;
use starlark::environment::GlobalsBuilder;
use starlark::eval::{Arguments, Evaluator};
use starlark::starlark_simple_value;
use starlark::syntax::ast::{
    AssignOp, AstAssignTarget, AstExpr, AstStmt, AstString, Clause, Expr, Stmt,
};
use starlark::syntax::{AstModule, Dialect};
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{starlark_value, NoSerialize, StarlarkValue, UnpackValue, Value};

use super::limits::{Kind, Limit, MAX_DEPTH, MAX_DIGITS, MAX_HEAP_BYTES, MAX_LENGTH, MAX_STEPS};
use super::tables::STRING_METHOD_NAMES;
use super::values::Context;

/// The start of every name the rewrite adds; a file that uses it is read statically.
pub const RESERVED: &str = "__oracle_gate_";
const METHOD: &str = "__oracle_gate_method";
const SLICED: &str = "__oracle_gate_sliced";
const GROWS: &str = "__oracle_gate_grows";
const ITERATED: &str = "__oracle_gate_iterated";

/// The binary operators the rewrite checks: all but `and` and `or`, which need not
/// evaluate their right side.
const OPERATORS: [&str; 19] = [
    "==", "!=", "<", ">", "<=", ">=", "in", "not in", "-", "+", "*", "%", "/", "//", "&", "|", "^",
    "<<", ">>",
];

/// The operators that compare or print their operands, going through them recursively.
const RECURSIVE: [&str; 9] = ["==", "!=", "<", ">", "<=", ">=", "in", "not in", "%"];

/// The methods of lists and dicts whose calls are checked, as are those of strings
/// (`STRING_METHOD_NAMES`): all but those that take a step and build nothing
/// (`append`, `get`, ...).
const CHECKED_CONTAINER_METHODS: [&str; 4] = ["extend", "insert", "remove", "update"];

/// Whether a call of the method `name` is checked.
fn checked_method(name: &str) -> bool {
    STRING_METHOD_NAMES.contains(&name) || CHECKED_CONTAINER_METHODS.contains(&name)
}

/// A checked operation, as the rewritten file calls it.
#[derive(Debug, Clone, ProvidesStaticType, NoSerialize, Allocative)]
enum Checked {
    /// A binary operator, by its symbol: `__oracle_gate_+(a, b)`.
    Operator(&'static str),
    /// `__oracle_gate_method(receiver, name, *args, **kwargs)`.
    Method,
    /// `__oracle_gate_sliced(value)`: checked, then sliced by the file.
    Sliced,
    /// `__oracle_gate_grows(operator, current, operand)`: checked, then assigned.
    Grows,
    /// `__oracle_gate_iterated(value)`: what a `for` loops over, its iterations counted
    /// before they run (the interpreter's own count of them names no line).
    Iterated,
}
starlark_simple_value!(Checked);

impl fmt::Display for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Checked::Operator(symbol) => write!(f, "<operator {symbol}>"),
            Checked::Method => write!(f, "<method call>"),
            Checked::Sliced => write!(f, "<slice>"),
            Checked::Grows => write!(f, "<augmented assignment>"),
            Checked::Iterated => write!(f, "<loop>"),
        }
    }
}

#[starlark_value(type = "checked_operation")]
impl<'v> StarlarkValue<'v> for Checked {
    fn invoke(
        &self,
        _me: Value<'v>,
        args: &Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let heap = eval.heap();
        match self {
            Checked::Operator(symbol) => {
                let [left, right] = args.positional(heap)?;
                if RECURSIVE.contains(symbol) {
                    check_walk([left, right].into_iter(), eval)?;
                }
                let result = operate(symbol, left, right, eval)?;
                check_result(result, eval)?;
                Ok(result)
            }
            Checked::Method => {
                let positional: Vec<Value<'v>> = args.positions(heap)?.collect();
                let [receiver, name, rest @ ..] = positional.as_slice() else {
                    return Err(starlark::Error::new_other(std::io::Error::other(
                        "a method call without its receiver",
                    )));
                };
                let name = name.unpack_str().unwrap_or_default();
                let named = args.names_map()?;
                let named: Vec<(&str, Value<'v>)> =
                    named.iter().map(|(k, v)| (k.as_str(), *v)).collect();
                let values = named.iter().map(|(_, v)| *v);
                check_walk(rest.iter().copied().chain(values.clone()), eval)?;
                before(method_growth(*receiver, name, rest, values), eval)?;
                let method = receiver.get_attr_error(name, heap)?;
                let result = eval.eval_function(method, rest, &named)?;
                check_result(result, eval)?;
                Ok(result)
            }
            Checked::Sliced => {
                let value = args.positional1(heap)?;
                let length = length(value).map_or(0, |(_, n)| n);
                before(Growth::reads(length, bytes_of(value)), eval)?;
                Ok(value)
            }
            Checked::Iterated => {
                let value = args.positional1(heap)?;
                if let Some(context) = Context::of(eval) {
                    *context.last_loop.borrow_mut() = eval.call_stack_top_location();
                }
                before(Growth::reads(items(value), 0), eval)?;
                Ok(value)
            }
            Checked::Grows => {
                let [symbol, current, operand] = args.positional(heap)?;
                let symbol = symbol.unpack_str().unwrap_or_default();
                before(operator_growth(symbol, current, operand)?, eval)?;
                Ok(operand)
            }
        }
    }
}

/// The checked operations, by the names the rewritten file calls them by.
pub fn add_checked(builder: &mut GlobalsBuilder) {
    for symbol in OPERATORS {
        builder.set(&format!("{RESERVED}{symbol}"), Checked::Operator(symbol));
    }
    builder.set(METHOD, Checked::Method);
    builder.set(SLICED, Checked::Sliced);
    builder.set(GROWS, Checked::Grows);
    builder.set(ITERATED, Checked::Iterated);
}

/// What an operation is about to do: the longest value it builds (if it builds a
/// string, list or dict), the bytes that may take, and the items it reads.
#[derive(Default)]
pub struct Growth {
    built: Option<(Kind, u128)>,
    bytes: u128,
    steps: u128,
}

impl Growth {
    /// Reads `items` items, and may copy `bytes`.
    fn reads(items: usize, bytes: u128) -> Growth {
        Growth {
            built: None,
            bytes,
            steps: items as u128,
        }
    }

    /// Builds a `kind` of `length`, reading `read` items on the way.
    pub fn builds(kind: Kind, length: u128, read: usize) -> Growth {
        let per_item = if kind == Kind::String { 1 } else { 16 };
        Growth {
            built: Some((kind, length)),
            bytes: length.saturating_mul(per_item),
            steps: (read as u128).saturating_add(length),
        }
    }
}

/// The error a checked operation fails with when it would pass `limit`.
pub fn stop<T>(limit: Limit) -> starlark::Result<T> {
    Err(starlark::Error::new_other(limit))
}

/// Fails with the limit `growth` would pass, counting its steps.
pub fn before(growth: Growth, eval: &mut Evaluator<'_, '_, '_>) -> starlark::Result<()> {
    if growth.built.is_none() && growth.bytes == 0 && growth.steps == 0 {
        return Ok(()); // arithmetic on small numbers: nothing to count
    }
    if let Some((kind, length)) = growth.built {
        if length > MAX_LENGTH as u128 {
            return stop(Limit::Length(kind, length));
        }
    }
    let steps = Context::of(eval).map_or(0, |context| {
        let done = context.steps.get().saturating_add(growth.steps as u64);
        context.steps.set(done);
        done
    });
    if steps.saturating_add(eval.get_total_tick_count()) > MAX_STEPS {
        return stop(Limit::Steps);
    }
    let heap = eval.heap().allocated_bytes() + eval.frozen_heap().allocated_bytes();
    if growth.bytes.saturating_add(heap as u128) > MAX_HEAP_BYTES as u128 {
        return stop(Limit::Memory);
    }
    Ok(())
}

/// Fails when `result` (its length foreseen from a bound) is longer than a value may
/// be, or an integer with more digits.
pub fn check_result(result: Value<'_>, eval: &mut Evaluator<'_, '_, '_>) -> starlark::Result<()> {
    if let Some((kind, length)) = length(result) {
        if length > MAX_LENGTH {
            return stop(Limit::Length(kind, length as u128));
        }
    }
    if let Some(digits) = digits(result) {
        if digits > MAX_DIGITS {
            return stop(Limit::Digits(digits));
        }
        before(Growth::reads(digits, 0), eval)?;
    }
    Ok(())
}

/// Walks `values` and what they hold (lists, tuples and dicts, each as often as it is
/// reached, as printing or comparing them does), counting each visit as a step: fails
/// where one is nested deeper than `MAX_DEPTH`, or the visits would pass the steps left.
pub fn check_walk<'v>(
    values: impl Iterator<Item = Value<'v>>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<()> {
    let values: Vec<Value<'v>> = values.collect();
    if !values.iter().any(|v| container(*v)) {
        return Ok(()); // strings and numbers: no walk, nothing recursive
    }
    let done = Context::of(eval).map_or(0, |context| context.steps.get());
    let left = MAX_STEPS.saturating_sub(done.saturating_add(eval.get_total_tick_count()));
    let mut visits = 0u64;
    // The items left to visit at each level; never deeper than MAX_DEPTH.
    let mut levels: Vec<std::vec::IntoIter<Value<'v>>> = vec![values.into_iter()];
    while let Some(level) = levels.last_mut() {
        let Some(value) = level.next() else {
            levels.pop();
            continue;
        };
        visits += 1;
        if visits > left {
            return stop(Limit::Steps);
        }
        let inner: Option<Vec<Value<'v>>> = if let Some(list) = ListRef::from_value(value) {
            Some(list.content().to_vec())
        } else if let Some(tuple) = TupleRef::from_value(value) {
            Some(tuple.content().to_vec())
        } else {
            DictRef::from_value(value).map(|dict| dict.iter().flat_map(|(k, v)| [k, v]).collect())
        };
        if let Some(inner) = inner.filter(|items| !items.is_empty()) {
            if levels.len() >= MAX_DEPTH {
                return stop(Limit::Depth);
            }
            levels.push(inner.into_iter());
        }
    }
    before(Growth::reads(visits as usize, 0), eval)
}

/// Whether `value` is a list, tuple or dict.
fn container(value: Value<'_>) -> bool {
    matches!(value.get_type(), "list" | "tuple" | "dict")
}

/// The kind and length of a string (its bytes), list, tuple or dict; None otherwise.
pub fn length(value: Value<'_>) -> Option<(Kind, usize)> {
    if let Some(text) = value.unpack_str() {
        Some((Kind::String, text.len()))
    } else if let Some(list) = ListRef::from_value(value) {
        Some((Kind::List, list.len()))
    } else if let Some(tuple) = TupleRef::from_value(value) {
        Some((Kind::List, tuple.len()))
    } else {
        DictRef::from_value(value).map(|dict| (Kind::Dict, dict.len()))
    }
}

/// The number of items `value` yields when iterated: a range's or set's too.
pub fn items(value: Value<'_>) -> usize {
    match length(value) {
        Some((_, n)) => n,
        // Asked of no other type: a failed `length()` costs an error (and a backtrace).
        None if matches!(value.get_type(), "range" | "set") => {
            value.length().map_or(0, |n| n.max(0) as usize)
        }
        None => 0,
    }
}

/// The memory a copy of `value` takes at most (its items not copied).
fn bytes_of(value: Value<'_>) -> u128 {
    match length(value) {
        Some((Kind::String, n)) => n as u128,
        Some((_, n)) => 16 * n as u128,
        None => 0,
    }
}

/// The decimal digits of an integer too big for 32 bits; None for any other value.
fn digits(value: Value<'_>) -> Option<usize> {
    if value.get_type() != "int" || i32::unpack_value(value).ok().flatten().is_some() {
        return None;
    }
    Some(value.to_str().trim_start_matches('-').len())
}

/// The digits of an integer, 32-bit ones included; None for any other value.
fn int_digits(value: Value<'_>) -> Option<usize> {
    match i32::unpack_value(value).ok().flatten() {
        Some(small) => Some(
            small
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |d| d as usize + 1),
        ),
        None => digits(value),
    }
}

/// Whether `value` is an integer of 32 bits (or no integer): its product with another
/// such is no bigger than 64 bits.
fn small(value: Value<'_>) -> bool {
    i32::unpack_value(value).ok().flatten().is_some()
}

/// The least number of characters `str()` or `repr()` prints for `value`: each string's
/// own, one for any other value, one between items. `limits.printed_length` in Python.
pub fn printed_length(value: Value<'_>, budget: usize) -> usize {
    if let Some(text) = value.unpack_str() {
        return text.len();
    }
    let mut total = 0usize;
    let mut add = |items: &mut dyn Iterator<Item = Value<'_>>| {
        for item in items {
            total = total.saturating_add(1 + printed_length(item, budget.saturating_sub(total)));
            if total > budget {
                break;
            }
        }
    };
    if let Some(list) = ListRef::from_value(value) {
        add(&mut list.iter());
    } else if let Some(tuple) = TupleRef::from_value(value) {
        add(&mut tuple.iter());
    } else if let Some(dict) = DictRef::from_value(value) {
        add(&mut dict.iter().flat_map(|(key, item)| [key, item]));
    } else {
        return int_digits(value).unwrap_or(1);
    }
    total.max(1)
}

/// What `left <symbol> right` builds and reads.
fn operator_growth<'v>(
    symbol: &str,
    left: Value<'v>,
    right: Value<'v>,
) -> starlark::Result<Growth> {
    let read = items(left).saturating_add(items(right));
    let sum = |kind| Growth::builds(kind, read as u128, 0);
    Ok(match (symbol, length(left), length(right)) {
        ("+", Some((a, _)), Some((b, _))) if a == b && a != Kind::Dict => sum(a),
        ("|", Some((Kind::Dict, _)), Some((Kind::Dict, _))) => sum(Kind::Dict),
        ("*", Some((kind, n)), None) | ("*", None, Some((kind, n))) if kind != Kind::Dict => {
            let times = i32::unpack_value(if length(left).is_some() { right } else { left })
                .ok()
                .flatten()
                .map_or(0, |times| times.max(0) as u128);
            Growth::builds(kind, (n as u128).saturating_mul(times), 0)
        }
        ("*", None, None) if small(left) && small(right) => Growth::reads(0, 0),
        ("*", None, None) => match (int_digits(left), int_digits(right)) {
            (Some(a), Some(b)) if a + b - 1 > MAX_DIGITS => return stop(Limit::Digits(a + b - 1)),
            (Some(a), Some(b)) => Growth::reads(a + b, 0),
            _ => Growth::reads(0, 0),
        },
        ("%", Some((Kind::String, n)), _) => {
            let printed = printed_length(right, MAX_LENGTH);
            Growth::builds(Kind::String, (n + printed) as u128, printed)
        }
        _ => Growth::reads(read, 0),
    })
}

/// `left <symbol> right`, checked.
fn operate<'v>(
    symbol: &str,
    left: Value<'v>,
    right: Value<'v>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    before(operator_growth(symbol, left, right)?, eval)?;
    let heap = eval.heap();
    let order = |test: fn(std::cmp::Ordering) -> bool| -> starlark::Result<Value<'v>> {
        Ok(Value::new_bool(test(left.compare(right)?)))
    };
    match symbol {
        "==" => Ok(Value::new_bool(left.equals(right)?)),
        "!=" => Ok(Value::new_bool(!left.equals(right)?)),
        "<" => order(|o| o.is_lt()),
        ">" => order(|o| o.is_gt()),
        "<=" => order(|o| o.is_le()),
        ">=" => order(|o| o.is_ge()),
        "in" => Ok(Value::new_bool(right.is_in(left)?)),
        "not in" => Ok(Value::new_bool(!right.is_in(left)?)),
        "-" => left.sub(right, heap),
        "+" => left.add(right, heap),
        "*" => left.mul(right, heap),
        "%" => left.percent(right, heap),
        "/" => left.div(right, heap),
        "//" => left.floor_div(right, heap),
        "&" => left.bit_and(right, heap),
        "|" => left.bit_or(right, heap),
        "^" => left.bit_xor(right, heap),
        "<<" => left.left_shift(right, heap),
        _ => left.right_shift(right, heap),
    }
}

/// What `receiver.name(args..., **named)` builds and reads.
fn method_growth<'v>(
    receiver: Value<'v>,
    name: &str,
    args: &[Value<'v>],
    named: impl Iterator<Item = Value<'v>>,
) -> Growth {
    let size = items(receiver);
    let read = args
        .iter()
        .fold(size, |n, arg| n.saturating_add(items(*arg)));
    let Some(text) = receiver.unpack_str() else {
        return match (name, args) {
            ("extend", [more]) => Growth::builds(Kind::List, (size + items(*more)) as u128, 0),
            _ => Growth::reads(read, 0),
        };
    };
    match (name, args) {
        ("replace", [old, new, rest @ ..]) => {
            let (Some(old), Some(new)) = (old.unpack_str(), new.unpack_str()) else {
                return Growth::reads(read, 0);
            };
            let found = if old.is_empty() {
                text.chars().count() + 1
            } else {
                text.matches(old).count()
            };
            let limit = rest
                .first()
                .and_then(|n| i32::unpack_value(*n).ok().flatten());
            let count = match limit {
                Some(n) if n >= 0 => found.min(n as usize),
                _ => found,
            } as u128;
            let length = text.len() as u128 + count * new.len() as u128 - count * old.len() as u128;
            Growth::builds(Kind::String, length, read)
        }
        ("join", [parts]) => {
            let pieces = items(*parts);
            let list = ListRef::from_value(*parts)
                .map(|l| l.content().to_vec())
                .or_else(|| TupleRef::from_value(*parts).map(|t| t.content().to_vec()))
                .unwrap_or_default();
            let total: u128 = list
                .iter()
                .map(|part| part.unpack_str().map_or(0, str::len) as u128)
                .sum();
            let separators = text.len() as u128 * pieces.saturating_sub(1) as u128;
            Growth::builds(Kind::String, total + separators, read)
        }
        ("format", _) => {
            let fields = format_fields(text) as u128;
            let longest = args
                .iter()
                .copied()
                .chain(named)
                .map(|arg| printed_length(arg, MAX_LENGTH))
                .max()
                .unwrap_or(0) as u128;
            Growth::builds(Kind::String, text.len() as u128 + fields * longest, read)
        }
        // Every other method of a string builds at most a copy of it, or one list item
        // per character.
        _ => Growth::reads(read, 24 * (size as u128 + 1)),
    }
}

/// The replacement fields of a `format()` template: each `{` that is not `{{`.
/// `limits.format_fields` in Python.
pub fn format_fields(template: &str) -> usize {
    let mut fields = 0;
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '{' {
            if chars.peek() == Some(&'{') {
                chars.next();
            } else {
                fields += 1;
            }
        }
    }
    fields
}

/// `ast` (of `content`) rewritten so every growing operation is checked (the module
/// docs), or why it cannot be: the file is then read statically.
pub fn checked_module(
    ast: &AstModule,
    path: &str,
    content: &str,
    dialect: &Dialect,
) -> Result<AstModule, String> {
    let mut edits = Edits {
        content,
        list: Vec::new(),
        problem: None,
    };
    edits.statements(ast.statement());
    ast.statement().visit_expr(|e| edits.expression(e));
    if let Some(problem) = edits.problem {
        return Err(format!("{path}: {problem}"));
    }
    let rewritten = edits.apply();
    let mut module = AstModule::parse(path, rewritten, dialect)
        .map_err(|e| format!("{path}: the checked rewrite does not parse: {e}"))?;
    let operators = OPERATORS
        .iter()
        .map(|symbol| ((*symbol).to_owned(), format!("{RESERVED}{symbol}")))
        .collect();
    module.replace_binary_operators(&operators);
    Ok(module)
}

/// Of the parentheses in `text` (an expression's source, outside strings and
/// comments): how many `)` close a `(` before it, and how many `(` stay open at its end.
fn unbalanced(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest) = (0i64, 0i64);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth -= 1,
            b')' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            quote @ (b'\'' | b'"') => {
                let triple = bytes[i..].starts_with(&[quote, quote, quote]);
                i += if triple { 3 } else { 1 };
                while i < bytes.len() {
                    if bytes[i] == b'\\' {
                        i += 2;
                    } else if triple && bytes[i..].starts_with(&[quote, quote, quote]) {
                        i += 2;
                        break;
                    } else if !triple && bytes[i] == quote {
                        break;
                    } else {
                        i += 1;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (deepest.max(0) as usize, (deepest - depth) as usize)
}

/// Whether `expression` calls a function anywhere.
fn holds_call(expression: &AstExpr) -> bool {
    let mut found = matches!(expression.node, Expr::Call(..));
    expression
        .node
        .visit_expr(|inner| found |= holds_call(inner));
    found
}

/// One change to the source: `text` put in place of `start..end`. Of edits at one
/// place, those that close come first, then those that open, outermost first.
struct Edit {
    start: usize,
    end: usize,
    text: String,
    /// Orders edits at one place: closing ones by their expression's length, shortest
    /// first, then opening ones, longest first.
    order: (bool, i64),
}

struct Edits<'a> {
    content: &'a str,
    list: Vec<Edit>,
    problem: Option<&'static str>,
}

impl Edits<'_> {
    fn insert(&mut self, at: usize, text: String, opens: bool, length: usize) {
        let length = length as i64;
        self.list.push(Edit {
            start: at,
            end: at,
            text,
            order: (opens, if opens { -length } else { length }),
        });
    }

    fn fail(&mut self, problem: &'static str) {
        self.problem.get_or_insert(problem);
    }

    /// The source with every edit made.
    fn apply(mut self) -> String {
        self.list.sort_by_key(|edit| (edit.start, edit.order));
        let mut out = String::with_capacity(self.content.len() + 32 * self.list.len());
        let mut at = 0;
        for edit in &self.list {
            out.push_str(&self.content[at..edit.start.max(at)]);
            out.push_str(&edit.text);
            at = at.max(edit.end);
        }
        out.push_str(&self.content[at..]);
        out
    }

    /// The checks of the `+=` (and friends) in `statement` and the statements inside it.
    fn statements(&mut self, statement: &AstStmt) {
        if let Stmt::AssignModify(target, op, rhs) = &statement.node {
            let symbol = match op {
                AssignOp::Add => Some("+"),
                AssignOp::Multiply => Some("*"),
                AssignOp::Percent => Some("%"),
                AssignOp::BitOr => Some("|"),
                _ => None,
            };
            if let Some(symbol) = symbol {
                self.grows(symbol, target, rhs);
            }
        }
        if let Stmt::For(r#for) = &statement.node {
            self.iterated(&r#for.over);
        }
        statement.visit_stmt(|inner| self.statements(inner));
    }

    /// What a `for` or a comprehension's `for` loops over becomes
    /// `__oracle_gate_iterated(over)`.
    fn iterated(&mut self, over: &AstExpr) {
        let Some((start, end)) = self.extent(over, false) else {
            return self.fail("a loop over a value written in a way this reading cannot check");
        };
        let tuple = matches!(over.node, Expr::Tuple(_));
        let open = format!("{ITERATED}({}", if tuple { "(" } else { "" });
        self.insert(start, open, true, end - start);
        let close = if tuple { "))" } else { ")" }.to_owned();
        self.insert(end, close, false, end - start);
    }

    /// `target op= rhs` becomes `target op= __oracle_gate_grows("op", target, rhs)`.
    fn grows(&mut self, symbol: &str, target: &AstAssignTarget, rhs: &AstExpr) {
        let (start, end) = (
            target.span.begin().get() as usize,
            target.span.end().get() as usize,
        );
        let text = &self.content[start..end];
        let mut calls = false;
        target.visit_expr(|e| calls |= holds_call(e));
        if calls || text.contains(['\n', '#']) {
            // A target that calls a function would call it twice; one over lines or with
            // a comment would move the lines that follow.
            return self
                .fail("a compound assignment to a target that calls a function or spans lines");
        }
        let tuple = matches!(rhs.node, Expr::Tuple(_));
        let Some((rhs_start, rhs_end)) = self.extent(rhs, false) else {
            return self.fail(
                "a compound assignment of a value written in a way this reading cannot check",
            );
        };
        let open = format!(
            "{GROWS}(\"{symbol}\", {text}, {}",
            if tuple { "(" } else { "" }
        );
        self.insert(rhs_start, open, true, rhs_end - rhs_start);
        let close = if tuple { "))" } else { ")" }.to_owned();
        self.insert(rhs_end, close, false, rhs_end - rhs_start);
    }

    /// The checks of `expression` and of every expression inside it.
    fn expression(&mut self, expression: &AstExpr) {
        match &expression.node {
            Expr::FString(_) => self.fail("an f-string, which Bazel 4.2.3 does not have"),
            Expr::Call(function, arguments) => {
                if let Expr::Dot(receiver, name) = &function.node {
                    if checked_method(name.node.as_str()) {
                        self.method(receiver, name, arguments.args.is_empty());
                    }
                }
            }
            Expr::Slice(value, ..) => self.sliced(value),
            Expr::ListComprehension(_, first, clauses)
            | Expr::DictComprehension(_, first, clauses) => {
                self.iterated(&first.over);
                for clause in clauses {
                    if let Clause::For(clause) = clause {
                        self.iterated(&clause.over);
                    }
                }
            }
            _ => {}
        }
        expression.node.visit_expr(|inner| self.expression(inner));
    }

    /// The source range `value` takes with its parentheses: its span holds none of those
    /// around its first and last operands (`(a).x(y)` begins at `a`, `(a) + (b)` ends
    /// at `b`), nor (`grouped`: `value` is followed by `.` or `[`, so any `)` between
    /// closes a group around it) those around it (`(a + b).x`). None if the text
    /// before it is not only parentheses and spaces.
    fn extent(&self, value: &AstExpr, grouped: bool) -> Option<(usize, usize)> {
        let bytes = self.content.as_bytes();
        let (mut start, mut end) = (
            value.span.begin().get() as usize,
            value.span.end().get() as usize,
        );
        let (mut opening, mut inner) = unbalanced(&self.content[start..end]);
        let mut at = end;
        while let Some(&byte) = bytes.get(at) {
            match byte {
                // One that closes a `(` of the expression's own, else one around it.
                b')' if inner > 0 => {
                    inner -= 1;
                    end = at + 1;
                }
                b')' if grouped => {
                    opening += 1;
                    end = at + 1;
                }
                b'#' => {
                    while bytes.get(at + 1).is_some_and(|&b| b != b'\n') {
                        at += 1;
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' | b'\\' => {}
                _ => break,
            }
            at += 1;
        }
        while opening > 0 {
            start = start.checked_sub(1)?;
            match bytes[start] {
                b'(' => opening -= 1,
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => return None,
            }
        }
        Some((start, end))
    }

    /// Where the first character after `at` that is no space, newline or comment is.
    fn next_token(&self, mut at: usize) -> usize {
        let bytes = self.content.as_bytes();
        while let Some(&byte) = bytes.get(at) {
            match byte {
                b'#' => {
                    while bytes.get(at).is_some_and(|&b| b != b'\n') {
                        at += 1;
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' | b'\\' => at += 1,
                _ => break,
            }
        }
        at
    }

    /// `receiver.name(args)` becomes `__oracle_gate_method(receiver, "name", args)`.
    fn method(&mut self, receiver: &AstExpr, name: &AstString, bare: bool) {
        let Some((start, end)) = self.extent(receiver, true) else {
            return self
                .fail("a method called on a value written in a way this reading cannot check");
        };
        let bytes = self.content.as_bytes();
        let dot = self.next_token(end);
        let paren = self.next_token(name.span.end().get() as usize);
        if bytes.get(dot) != Some(&b'.') || bytes.get(paren) != Some(&b'(') {
            return self
                .fail("a method called on a value written in a way this reading cannot check");
        }
        let lines = self.content[dot..paren].matches('\n').count();
        let length = paren - start;
        self.insert(start, format!("{METHOD}("), true, length);
        let separator = if bare { "" } else { ", " };
        self.list.push(Edit {
            start: dot,
            end: paren + 1,
            text: format!(", \"{}\"{separator}{}", name.node, "\n".repeat(lines)),
            order: (false, 0),
        });
    }

    /// `value[a:b]` becomes `__oracle_gate_sliced(value)[a:b]`.
    fn sliced(&mut self, value: &AstExpr) {
        let Some((start, end)) = self.extent(value, true) else {
            return self.fail("a slice of a value written in a way this reading cannot check");
        };
        if self.content.as_bytes().get(self.next_token(end)) != Some(&b'[') {
            return self.fail("a slice of a value written in a way this reading cannot check");
        }
        self.insert(start, format!("{SLICED}("), true, end - start);
        self.insert(end, ")".to_owned(), false, end - start);
    }
}

/// What a call of the interpreter's builtin `name` builds and reads, checked before it
/// runs (`values::call_standard`); its result is checked after (`check_result`).
pub fn check_builtin<'v>(
    name: &str,
    positional: &[Value<'v>],
    named: &[(&str, Value<'v>)],
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<()> {
    let first = positional.first().copied();
    let size = first.map_or(0, items);
    let growth = match name {
        "list" | "tuple" | "sorted" | "reversed" | "enumerate" => {
            Growth::builds(Kind::List, size as u128, size)
        }
        "zip" => {
            let shortest = positional.iter().map(|v| items(*v)).min().unwrap_or(0);
            Growth::builds(Kind::List, shortest as u128, shortest)
        }
        "dict" => Growth::builds(Kind::Dict, (size + named.len()) as u128, size),
        "str" | "repr" | "print" | "fail" | "json.encode" | "json.encode_indent" => {
            let printed = positional
                .iter()
                .chain(named.iter().map(|(_, v)| v))
                .fold(0usize, |n, v| {
                    n.saturating_add(printed_length(*v, MAX_LENGTH))
                });
            Growth::builds(Kind::String, printed as u128, printed)
        }
        "int" => match first.and_then(|v| v.unpack_str()) {
            Some(text) => {
                let digits = text.chars().filter(char::is_ascii_digit).count();
                if digits > MAX_DIGITS {
                    return stop(Limit::Digits(digits));
                }
                Growth::reads(text.len(), 0)
            }
            None => Growth::reads(0, 0),
        },
        _ => Growth::reads(size, 0),
    };
    before(growth, eval)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The source `checked_module` evaluates for `content`, or why it does not.
    fn rewritten(content: &str) -> Result<String, String> {
        let dialect = Dialect::Extended;
        let ast =
            AstModule::parse("a/BUILD", content.to_owned(), &dialect).map_err(|e| e.to_string())?;
        let mut edits = Edits {
            content,
            list: Vec::new(),
            problem: None,
        };
        edits.statements(ast.statement());
        ast.statement().visit_expr(|e| edits.expression(e));
        match edits.problem {
            Some(problem) => Err(problem.to_owned()),
            None => Ok(edits.apply()),
        }
    }

    #[test]
    fn growing_operations_are_rewritten_in_place_lines_kept() {
        assert_eq!(
            rewritten("x = (a + b).replace(\"x\", y)[1:]\n").unwrap(),
            "x = __oracle_gate_sliced(__oracle_gate_method((a + b), \"replace\", \"x\", y))[1:]\n"
        );
        assert_eq!(
            rewritten("x += a, b\nfor i in r:\n    s.upper(\n    )\n").unwrap(),
            "x += __oracle_gate_grows(\"+\", x, (a, b))\nfor i in __oracle_gate_iterated(r):\n    \
             __oracle_gate_method(s, \"upper\"\n    )\n"
        );
        // A span holds no parenthesis around its first operand: the rewrite does.
        assert_eq!(
            rewritten("z = (a).upper() + (b)\nx += (a) + (b)  # c\n").unwrap(),
            "z = __oracle_gate_method((a), \"upper\") + (b)\n\
             x += __oracle_gate_grows(\"+\", x, (a) + (b))  # c\n"
        );
        assert_eq!(
            rewritten("y = [i for i in a.split(',') if i]\n").unwrap(),
            "y = [i for i in __oracle_gate_iterated(__oracle_gate_method(a, \"split\", ',')) if i]\n"
        );
    }

    #[test]
    fn what_the_rewrite_cannot_check_is_not_run() {
        assert!(rewritten("x = f\"{a}\"\n")
            .unwrap_err()
            .contains("f-string"));
        assert!(rewritten("d[f()] += [1]\n")
            .unwrap_err()
            .contains("calls a function"));
    }

    #[test]
    fn format_fields_skip_escaped_braces() {
        assert_eq!(format_fields("{}-{0}-{{x}}-{a}"), 3);
    }
}
