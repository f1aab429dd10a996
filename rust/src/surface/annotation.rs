//! Which signature annotations are part of a unit's text (docs/surface.md §4.3), the
//! Rust twin of `_running` in `python/oracle_gate/surface.py`.
//!
//! Python evaluates a `def`'s annotations when the `def` runs (at import, for a
//! test), so `-> pytest.skip("", allow_module_level=True)` skips a whole module. A
//! type expression runs nothing of the file's: names, attributes of it, constants,
//! subscripts, tuples and lists of them, and `|`. Anything else is written.

use ruff_python_ast::{Expr, Operator, UnaryOp};

/// The annotation when evaluating it can run code, `None` for a type expression.
///
/// The walk is iterative: an attribute chain may be deeper than any stack.
pub(crate) fn running(annotation: Option<&Expr>) -> Option<&Expr> {
    let annotation = annotation?;
    let mut stack = vec![annotation];
    while let Some(expr) = stack.pop() {
        match expr {
            Expr::Name(_)
            | Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::NumberLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_) => {}
            Expr::Attribute(a) => stack.push(&a.value),
            Expr::Subscript(s) => stack.extend([&*s.value, &*s.slice]),
            Expr::Tuple(t) => stack.extend(t.elts.iter()),
            Expr::List(l) => stack.extend(l.elts.iter()),
            Expr::BinOp(b) if b.op == Operator::BitOr => stack.extend([&*b.left, &*b.right]),
            // `Literal[-1]`: a sign on a number constant
            Expr::UnaryOp(u)
                if matches!(u.op, UnaryOp::USub | UnaryOp::UAdd)
                    && matches!(*u.operand, Expr::NumberLiteral(_)) => {}
            _ => return Some(annotation),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::running;
    use ruff_python_ast::{Expr, Stmt};

    fn annotation(source: &str) -> Result<Expr, String> {
        let parsed = ruff_python_parser::parse_module(source).map_err(|e| e.to_string())?;
        match parsed.into_syntax().body.into_iter().next() {
            Some(Stmt::AnnAssign(a)) => Ok(*a.annotation),
            other => Err(format!("not an annotated assignment: {other:?}")),
        }
    }

    /// Each annotation, and whether evaluating it can run code.
    const CASES: &[(&str, bool)] = &[
        ("None", false),
        ("int", false),
        ("'Foo'", false),
        ("typing.Optional[Sequence[str]]", false),
        ("dict[str, list[int]] | None", false),
        ("Callable[[int], str]", false),
        ("Literal[-1, 'a', b'x', True, ...]", false),
        ("pytest.skip('', allow_module_level=True)", true),
        ("CASES.clear()", true),
        ("list[f()]", true),
        ("(lambda: 0)", true),
        ("f'{x}'", true),
        ("tuple[*Ts]", true),
        ("a + b", true),
        ("-x", true),
        ("[i for i in y]", true),
    ];

    #[test]
    fn only_type_expressions_are_left_out() -> Result<(), String> {
        for &(hint, runs) in CASES {
            let parsed = annotation(&format!("x: {hint}\n"))?;
            assert_eq!(running(Some(&parsed)).is_some(), runs, "{hint}");
        }
        Ok(())
    }
}
