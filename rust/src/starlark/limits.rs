//! What one file's evaluation may take: its syntax's depth, the values it builds, its
//! steps and its memory.
//!
//! `python/oracle_gate/bazel/limits.py` keeps the same limits for the static reader,
//! with the same words, so a file that stops one backend stops the other; each rule
//! is in `docs/selection.md`. A file nested too deeply is never parsed (the parser and
//! every walk of the syntax tree recurse once per level): it comes back with the reason,
//! and the static reader gives the same one. Every other limit stops the evaluation
//! with a `Limit` error, which `eval.rs` reports with the file and line where the
//! limit was reached.

use std::fmt;

/// The most brackets open at once: the most Python's parser takes (its tokenizer
/// stops at 200), so the static reader reads every file the evaluator does.
pub const MAX_BRACKETS: usize = 200;
/// The most levels of indentation, Python's limit too (99).
pub const MAX_INDENTS: usize = 99;
/// The most levels of brackets, operators and indentation one expression may nest
/// (`nesting`): well under what either parser recurses through on its stack, and over
/// what a generated BUILD file adds together (1,500 lists).
pub const MAX_NESTING: usize = 2000;

/// The most characters of a string, or items of a list, tuple or dict, one operation
/// may build. No BUILD file needs more; a 16 MiB string or a 128 MiB list is cheap.
pub const MAX_LENGTH: usize = 1 << 24;
/// The most decimal digits of an integer (Python's own limit for printing one).
pub const MAX_DIGITS: usize = 4300;
/// The most levels of lists, tuples and dicts inside each other one value may have when
/// a rule, a builtin, a comparison or a `.bzl` file's globals hold it: the interpreter's
/// printing, comparing and freezing recurse once per level (a loop doing `x = [x]`
/// builds any depth), and so do the static reader's walks. BUILD files nest a few.
pub const MAX_DEPTH: usize = 100;

/// Function calls, loop iterations and items handled (`checked.rs`) one file's
/// evaluation may take: some seconds. A file that needs more (`range(100000)` nested
/// three deep) would hold Bazel as long, and an agent's patch must not hold the gate, or
/// send the file to the static reader.
pub const MAX_STEPS: u64 = 100_000_000;

/// The memory one file's evaluation may take (its Starlark heap, checked before each
/// operation that builds a string or a list, and every thousand steps). A `BUILD` file
/// and its macros need some megabytes; a patch that builds gigabytes (`[[0] * 30000 for
/// i in range(30000)]`) must not take the gate's machine down.
pub const MAX_HEAP_BYTES: usize = 1 << 30;

/// The memory the `.bzl` modules of one run may keep together (their frozen heaps). A
/// monorepo's `.bzl` files keep some tens of megabytes; a patch that spreads its bulk
/// over many files, each under `MAX_HEAP_BYTES`, must be stopped as well.
pub const MAX_KEPT_BYTES: usize = 2 << 30;

/// How the reason of every limit but nesting starts; `bazel/starlark.py` turns an
/// outcome whose error holds it into the gate error, not a file for the static reader.
pub const STOPPED: &str = "Starlark evaluation stopped";

/// What a value too long to build is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    List,
    Dict,
}

/// A limit an evaluation reached: the error a checked operation fails with.
#[derive(Debug)]
pub enum Limit {
    Steps,
    Memory,
    /// A value of this kind and length (characters or items) would be built.
    Length(Kind, u128),
    /// An integer of this many digits would be built.
    Digits(usize),
    /// A value nested deeper than `MAX_DEPTH` was given on.
    Depth,
}

impl Limit {
    /// Why the evaluation of `path` stopped: what follows `STOPPED`.
    pub fn reason(&self, path: &str) -> String {
        match self {
            Limit::Steps => {
                format!("after {MAX_STEPS} steps evaluating {path}, as long as Bazel would spend on it")
            }
            Limit::Memory => format!(
                "after {} MiB of memory evaluating {path}, more than any BUILD file needs",
                MAX_HEAP_BYTES >> 20
            ),
            Limit::Length(kind, length) => {
                let (what, unit) = match kind {
                    Kind::String => ("a string", "characters"),
                    Kind::List => ("a list", "items"),
                    Kind::Dict => ("a dict", "items"),
                };
                format!(
                    "building {what} of {length} {unit}, more than the {MAX_LENGTH} one value may hold"
                )
            }
            Limit::Digits(digits) => format!(
                "building an integer of {digits} digits, more than the {MAX_DIGITS} one value may hold"
            ),
            Limit::Depth => format!(
                "at a value nested more than {MAX_DEPTH} levels deep, more than any BUILD file needs"
            ),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{STOPPED} {}", self.reason("this file"))
    }
}

impl std::error::Error for Limit {}

/// Where a file is nested deeper than a limit: its 1-based line and which limit.
#[derive(Debug, PartialEq, Eq)]
pub struct TooDeep {
    pub line: usize,
    pub reason: &'static str,
}

impl fmt::Display for TooDeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "is nested too deeply: {}; give inner parts names of their own",
            self.reason
        )
    }
}

const TOO_MANY_BRACKETS: &str =
    "more than 200 brackets open at once, the most Python's parser reads";
const TOO_MANY_INDENTS: &str = "more than 99 levels of indentation, the most Python's parser reads";
const TOO_MANY_DIGITS: &str = "a number of more than 4300 digits, the most Python's parser reads";
const TOO_MUCH_NESTING: &str =
    "more than 2000 levels of brackets, operators and indentation in one expression";

/// Keywords that join or wrap expressions, each a level of the syntax tree.
const KEYWORD_OPERATORS: [&str; 8] = ["and", "or", "not", "in", "is", "if", "else", "lambda"];
/// Characters of operators (and `.`, `=`): each one a level, however they combine.
const OPERATOR_CHARS: &str = "+-*/%&|^~<>=!@.";

/// Why `content` is nested deeper than a parser should follow, or None.
///
/// Measured on tokens, before parsing: brackets open at once (`MAX_BRACKETS`),
/// levels of indentation (`MAX_INDENTS`), number literals of more than `MAX_DIGITS`
/// digits, and nesting (`MAX_NESTING`): the
/// indentation, plus for each open bracket one level and the operators, keywords
/// and `.`s before it in its comma-separated item (a bracket right after a value,
/// a call or an index, is one more), plus those of the innermost item so far. That
/// is never less than the depth of the syntax tree either parser builds, whose walks
/// recurse once per level. `limits.nesting_problem` in Python is the same scan,
/// character for character.
pub fn nesting(content: &str) -> Option<TooDeep> {
    let chars: Vec<char> = content.chars().collect();
    let mut scan = Scan::default();
    let mut i = 0;
    while i < chars.len() {
        let step = if scan.at_line_start {
            scan.indentation(&chars, i)
        } else {
            scan.token(&chars, i)
        };
        match step {
            Ok(next) => i = next,
            Err(reason) => {
                return Some(TooDeep {
                    line: scan.line,
                    reason,
                })
            }
        }
    }
    None
}

/// A character of a name or a number: ASCII letters, digits and `_`, and (as both
/// scans take it) any character outside ASCII.
fn is_name_char(c: char) -> bool {
    c == '_' || c.is_ascii_alphanumeric() || !c.is_ascii()
}

/// The end of the run of `chars` from `start` whose characters satisfy `keep`.
fn skip_while(chars: &[char], start: usize, keep: impl Fn(char) -> bool) -> usize {
    let mut end = start;
    while end < chars.len() && keep(chars[end]) {
        end += 1;
    }
    end
}

/// The end of the string literal opening at `start` (its quote): past its closing
/// quote, at the newline that ends an unclosed one-line string, or at the end.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '\n' if !triple => return i,
            c if c == quote && !triple => return i + 1,
            c if c == quote
                && chars.get(i + 1) == Some(&quote)
                && chars.get(i + 2) == Some(&quote) =>
            {
                return i + 3
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// The state of `nesting`'s scan.
struct Scan {
    line: usize,
    at_line_start: bool,
    /// Per open bracket (and the statement at the bottom): the levels of its current item.
    counters: Vec<usize>,
    /// The sum of `counters`.
    levels: usize,
    /// The indentation columns of the enclosing blocks, the file's own (0) first.
    indents: Vec<usize>,
    /// Whether the last token ends a value, so a bracket after it is a call or an index.
    after_value: bool,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            line: 1,
            at_line_start: true,
            counters: vec![0],
            levels: 0,
            indents: vec![0],
            after_value: false,
        }
    }
}

type Step = Result<usize, &'static str>;

impl Scan {
    /// At the start of a line outside brackets: its indentation opens or closes blocks,
    /// unless the line is blank or only a comment. Returns where its first token is.
    fn indentation(&mut self, chars: &[char], start: usize) -> Step {
        self.at_line_start = false;
        let mut column = 0;
        let mut i = start;
        while let Some(&c) = chars.get(i) {
            match c {
                ' ' => column += 1,
                '\t' => column = (column / 8 + 1) * 8,
                '\x0c' => column = 0,
                '\r' => {}
                _ => break,
            }
            i += 1;
        }
        if matches!(chars.get(i), None | Some('\n' | '#')) {
            return Ok(i);
        }
        while self.indents.last().is_some_and(|&top| top > column) {
            self.indents.pop();
        }
        if self.indents.last().is_some_and(|&top| column > top) {
            self.indents.push(column);
        }
        if self.indents.len() - 1 > MAX_INDENTS {
            return Err(TOO_MANY_INDENTS);
        }
        self.check().map(|()| i)
    }

    /// Reads the token at `i`; returns where the next one may start.
    fn token(&mut self, chars: &[char], i: usize) -> Step {
        let c = chars[i];
        match c {
            '#' => Ok(skip_while(chars, i, |c| c != '\n')),
            '\'' | '"' => {
                let end = skip_string(chars, i);
                self.line += chars[i..end].iter().filter(|&&c| c == '\n').count();
                self.after_value = true;
                Ok(end)
            }
            '\\' if chars.get(i + 1) == Some(&'\n') => {
                self.line += 1;
                Ok(i + 2)
            }
            '\n' => {
                self.line += 1;
                if self.counters.len() == 1 {
                    self.end_statement();
                    self.at_line_start = true;
                }
                Ok(i + 1)
            }
            ';' if self.counters.len() == 1 => {
                self.end_statement();
                Ok(i + 1)
            }
            '(' | '[' | '{' => self.open().map(|()| i + 1),
            ')' | ']' | '}' => {
                self.close();
                Ok(i + 1)
            }
            ',' => {
                self.comma();
                Ok(i + 1)
            }
            _ if c.is_ascii_digit() => {
                self.after_value = true;
                let end = skip_while(chars, i, |c| is_name_char(c) || c == '.');
                if chars[i..end].iter().filter(|c| c.is_ascii_digit()).count() > MAX_DIGITS {
                    return Err(TOO_MANY_DIGITS);
                }
                Ok(end)
            }
            _ if is_name_char(c) => {
                let end = skip_while(chars, i, is_name_char);
                let word: String = chars[i..end].iter().collect();
                if KEYWORD_OPERATORS.contains(&word.as_str()) {
                    self.operator()?;
                } else {
                    self.after_value = true;
                }
                Ok(end)
            }
            _ if OPERATOR_CHARS.contains(c) => self.operator().map(|()| i + 1),
            _ => {
                if !matches!(c, ' ' | '\t' | '\r' | '\x0b' | '\x0c') {
                    self.after_value = false;
                }
                Ok(i + 1)
            }
        }
    }

    fn check(&self) -> Result<(), &'static str> {
        let depth = self.indents.len() - 1 + self.counters.len() - 1 + self.levels;
        if depth > MAX_NESTING {
            return Err(TOO_MUCH_NESTING);
        }
        Ok(())
    }

    /// One more level in the current item.
    fn level(&mut self) {
        if let Some(last) = self.counters.last_mut() {
            *last += 1;
            self.levels += 1;
        }
    }

    fn operator(&mut self) -> Result<(), &'static str> {
        self.after_value = false;
        self.level();
        self.check()
    }

    fn open(&mut self) -> Result<(), &'static str> {
        if self.after_value {
            self.level();
        }
        self.after_value = false;
        self.counters.push(0);
        if self.counters.len() - 1 > MAX_BRACKETS {
            return Err(TOO_MANY_BRACKETS);
        }
        self.check()
    }

    fn close(&mut self) {
        if self.counters.len() > 1 {
            self.levels -= self.counters.pop().unwrap_or(0);
        }
        self.after_value = true;
    }

    fn comma(&mut self) {
        if let Some(last) = self.counters.last_mut() {
            self.levels -= *last;
            *last = 0;
        }
        self.after_value = false;
    }

    fn end_statement(&mut self) {
        self.levels -= self.counters[0];
        self.counters[0] = 0;
        self.after_value = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_line(content: &str) -> Option<(usize, &'static str)> {
        nesting(content).map(|found| (found.line, found.reason))
    }

    #[test]
    fn brackets_past_pythons_limit_are_too_deep() {
        let at = |n: usize| format!("x = 1\ny = {}{}\n", "[".repeat(n), "]".repeat(n));
        assert_eq!(depth_line(&at(MAX_BRACKETS)), None);
        assert_eq!(
            depth_line(&at(MAX_BRACKETS + 1)),
            Some((2, TOO_MANY_BRACKETS))
        );
    }

    #[test]
    fn a_long_chain_is_too_deep_and_a_long_list_is_not() {
        let chain = |n: usize| format!("x = {}\n", vec!["[1]"; n].join(" + "));
        assert_eq!(depth_line(&chain(1500)), None);
        assert_eq!(
            depth_line(&chain(MAX_NESTING + 2)),
            Some((1, TOO_MUCH_NESTING))
        );
        let items = format!("x = [{}]\n", vec!["a + b"; 100_000].join(",\n"));
        assert_eq!(depth_line(&items), None);
        let calls = format!("x = len{}\n", "()".repeat(MAX_NESTING + 1));
        assert_eq!(depth_line(&calls), Some((1, TOO_MUCH_NESTING)));
        let minus = format!("x = {}1\n", "-".repeat(MAX_NESTING + 1));
        assert_eq!(depth_line(&minus), Some((1, TOO_MUCH_NESTING)));
    }

    #[test]
    fn strings_and_comments_hold_no_brackets() {
        let deep = "[".repeat(1000);
        let content =
            format!("x = '{deep}'  # {deep}\ny = \"\"\"\n{deep}\n\"\"\"\nz = 'a\\'{deep}'\n");
        assert_eq!(depth_line(&content), None);
    }

    #[test]
    fn indentation_past_pythons_limit_is_too_deep() {
        let blocks = |n: usize| {
            let mut text: String = (0..n)
                .map(|i| format!("{}if a:\n", " ".repeat(i)))
                .collect();
            text.push_str(&format!("{}pass\n", " ".repeat(n)));
            text
        };
        assert_eq!(depth_line(&blocks(MAX_INDENTS)), None);
        assert_eq!(
            depth_line(&blocks(MAX_INDENTS + 1)),
            Some((MAX_INDENTS + 2, TOO_MANY_INDENTS))
        );
    }
}
