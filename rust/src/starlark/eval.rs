//! BUILD files evaluated as Starlark, in parallel, with the repository's own `.bzl` files.
//!
//! Each BUILD file runs in its own module: its `load()`s of `.bzl` files in the
//! tree are evaluated for real (once per run, shared between threads), loads
//! from repositories that are not in the tree give opaque symbols, and every
//! name the file uses that nothing defines (`cc_library`, `py_test`) is a rule
//! that records its arguments' labels.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use starlark::codemap::{FileSpan, Span};
use starlark::environment::{FrozenModule, Globals, GlobalsBuilder, Module};
use starlark::eval::{Evaluator, FileLoader};
use starlark::syntax::ast::{
    ArgumentP, AssignOp, AstExpr, AstLiteral, AstStmt, BinOp, Clause, Expr, Stmt,
};
use starlark::syntax::{AstModule, Dialect};
use starlark::ErrorKind;

use super::checked::{add_checked, check_walk, checked_module, RESERVED};
use super::edges::Repositories;
use super::gate::{bound_names, read_gates, top_level, Gates, GATE_FUNCTION};
use super::guess;
use super::limits::{nesting, Limit, MAX_HEAP_BYTES, MAX_KEPT_BYTES, MAX_STEPS, STOPPED};
use super::plain::plain_records;
use super::tables::{BOUNDED_STRING_METHODS, STRING_METHOD_NAMES};
use super::values::{
    standard_globals, unlike_bazel_char, Context, Magic, PackageFiles, Record, TreeFiles,
    EXTENSIONS, PACKAGE_FUNCTIONS,
};

/// One BUILD file to evaluate.
#[derive(Clone, Copy)]
pub struct BuildInput<'a> {
    /// Repository-relative path of the BUILD file (messages, locations).
    pub path: &'a str,
    /// Its package, relative to its workspace.
    pub package: &'a str,
    /// The workspace root it belongs to, repository-relative ("" for the main one).
    pub workspace: &'a str,
    pub content: &'a str,
}

/// What one BUILD file's evaluation found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub records: Vec<Record>,
    /// Repository-relative `.bzl` files it loads, directly or through others, sorted.
    pub loads: Vec<String>,
    /// Why it could not be evaluated (then the caller falls back to reading it).
    pub error: String,
    /// Lines (1-based, inclusive ranges) holding only calls of functions other than
    /// `oracle_gate`: without them the file declares the same gate, so the static
    /// reader that builds a gate's matrix can skip them (`graph/scan.py`). Empty for a
    /// file whose gate calls were read and are none.
    pub rule_lines: Vec<(usize, usize)>,
    /// Its `oracle_gate(...)` calls, when each is written plainly (`gate.rs`).
    pub gates: Option<Gates>,
}

/// The shared state of one run: the `.bzl` sources and the modules made from them.
struct Run<'a> {
    globals: Globals,
    global_names: HashSet<String>,
    dialect: Dialect,
    bzl: &'a HashMap<String, String>,
    repositories: &'a Repositories,
    modules: Mutex<HashMap<String, Arc<Result<Loaded, String>>>>,
    /// The heap bytes of the `.bzl` modules in `modules`, kept until the run ends.
    kept_bytes: AtomicUsize,
    /// Opaque modules by label and symbols: every BUILD file of a monorepo loads the
    /// same few rule sets, and freezing a module costs more than evaluating most files.
    opaque: Mutex<HashMap<(String, Vec<String>), FrozenModule>>,
    /// Run every BUILD file, plain ones too (`plain.rs`): what the plain reading is tested
    /// against.
    interpret_all: bool,
    /// What `glob()` sees; None: every glob is opaque.
    tree: Option<&'a TreeFiles<'a>>,
}

/// What evaluating one file gives.
struct Evaluated {
    /// The frozen module of a `.bzl` file (what its loaders import); None for a BUILD file.
    module: Option<FrozenModule>,
    records: Vec<Record>,
    /// The `.bzl` files it reached, transitively, sorted.
    files: Vec<String>,
    /// A BUILD file's lines holding only rule calls (`rule_only_lines`).
    rule_lines: Vec<(usize, usize)>,
    /// A BUILD file's gate calls (`gate::read_gates`).
    gates: Option<Gates>,
}

#[derive(Clone)]
struct Loaded {
    module: FrozenModule,
    /// Every `.bzl` file this one loads, transitively, itself included.
    files: Vec<String>,
}

fn globals() -> Globals {
    let mut builder = GlobalsBuilder::extended_by(&EXTENSIONS);
    // The interpreter's builtins, each wrapped: Bazel types and prints them otherwise
    // (`type(len)` is "builtin_function_or_method" there, `str(len)` "<built-in
    // function len>"), and a macro could choose its labels by the answer.
    for (name, value) in standard_globals().iter() {
        if value.to_value().get_type() == "function" {
            builder.set(
                name,
                Magic::Standard {
                    name: name.to_owned(),
                },
            );
        }
    }
    // `native`'s functions; `existing_rule(s)` is Bazel's in a BUILD file as
    // `native.existing_rule(s)` in a macro.
    for name in PACKAGE_FUNCTIONS.into_iter().chain([
        "rule",
        "macro",
        "aspect",
        "subrule",
        "exec_group",
        "depset",
        // Shadowing the standard ones: they note a look at a stand-in value, or at
        // attributes Bazel lists otherwise (`guess.rs`).
        "type",
        "getattr",
        "hasattr",
        "dir",
    ]) {
        builder.set(
            name,
            Magic::Builtin {
                name: name.to_owned(),
            },
        );
    }
    add_checked(&mut builder);
    for name in ["native", "attr", "json"] {
        builder.set(
            name,
            Magic::Namespace {
                name: name.to_owned(),
            },
        );
    }
    builder.build()
}

fn dialect() -> Dialect {
    Dialect {
        enable_f_strings: true,
        ..Dialect::Extended
    }
}

/// Where a `load()` label leads: a `.bzl` file of the tree, or an opaque repository.
enum Target {
    File {
        path: String,
        package: String,
    },
    /// A file of this repository the tree lacks: opaque, but still a file it loads.
    Missing {
        path: String,
    },
    Opaque(String),
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/")
}

impl Run<'_> {
    fn resolve(&self, label: &str, workspace: &str, package: &str) -> Target {
        let mut root = workspace;
        let rest = if let Some(stripped) = label.strip_prefix('@') {
            let stripped = stripped.trim_start_matches('@');
            let (repo, tail) = stripped.split_once("//").unwrap_or((stripped, ""));
            match self.repositories.root_of(Some(repo), workspace) {
                Some(found) => root = found,
                None => return Target::Opaque(label.to_owned()),
            }
            format!("//{tail}")
        } else {
            label.to_owned()
        };
        let (pkg, name) = match rest.strip_prefix("//") {
            Some(absolute) => match absolute.split_once(':') {
                Some((pkg, name)) => (pkg.to_owned(), name.to_owned()),
                None => return Target::Opaque(label.to_owned()),
            },
            None => (package.to_owned(), rest.trim_start_matches(':').to_owned()),
        };
        let path = join(&[root, &pkg, &name]);
        if self.bzl.contains_key(&path) {
            Target::File { path, package: pkg }
        } else {
            Target::Missing { path }
        }
    }

    /// The module of the `.bzl` file at `path`, evaluated once per run.
    fn load_bzl(&self, path: &str, package: &str, chain: &[String]) -> Arc<Result<Loaded, String>> {
        if let Some(found) = self.modules.lock().unwrap().get(path) {
            return found.clone();
        }
        if chain.iter().any(|p| p == path) {
            return Arc::new(Err(format!("load cycle through {path}")));
        }
        let mut chain = chain.to_vec();
        chain.push(path.to_owned());
        let workspace = self.workspace_of(path);
        let result = self
            .evaluate(path, &self.bzl[path], &workspace, package, &chain, true)
            .and_then(|evaluated| self.keep(path, evaluated));
        let result = Arc::new(result);
        self.modules
            .lock()
            .unwrap()
            .entry(path.to_owned())
            .or_insert(result)
            .clone()
    }

    /// A `.bzl` file's module, to be kept for the run: within `MAX_KEPT_BYTES` for all of
    /// them, since each file's own limit alone would let many files fill the memory.
    fn keep(&self, path: &str, evaluated: Evaluated) -> Result<Loaded, String> {
        let module = evaluated.module.unwrap();
        let bytes = module.frozen_heap().allocated_bytes();
        if self.kept_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > MAX_KEPT_BYTES {
            return Err(format!(
                "{path}:1: {STOPPED} after {} MiB of memory for the .bzl files loaded up to \
                 this one, more than any repository's .bzl files need",
                MAX_KEPT_BYTES >> 20
            ));
        }
        Ok(Loaded {
            module,
            files: evaluated.files,
        })
    }

    /// The opaque module for `symbols` of `label`, made once per run.
    fn opaque_module<'s>(
        &self,
        label: &str,
        symbols: impl Iterator<Item = &'s str>,
    ) -> Result<FrozenModule, String> {
        let mut symbols: Vec<String> = symbols.map(str::to_owned).collect();
        symbols.sort();
        let key = (label.to_owned(), symbols);
        if let Some(found) = self.opaque.lock().unwrap().get(&key) {
            return Ok(found.clone());
        }
        let module = opaque_module(label, &key.1)?;
        Ok(self
            .opaque
            .lock()
            .unwrap()
            .entry(key)
            .or_insert(module)
            .clone())
    }

    fn workspace_of(&self, path: &str) -> String {
        let mut best = "";
        for root in self.repositories.own.keys() {
            if (root.is_empty() || path.starts_with(&format!("{root}/")))
                && root.len() >= best.len()
            {
                best = root;
            }
        }
        best.to_owned()
    }

    /// `@name`, the name the main repository gives the one rooted at `workspace` ("" for
    /// the main one, or one it does not name).
    fn repository_name(&self, workspace: &str) -> String {
        let named = &self.repositories.named;
        let mut names: Vec<&String> = named
            .iter()
            .filter(|(_, root)| !workspace.is_empty() && root.as_str() == workspace)
            .map(|(name, _)| name)
            .collect();
        names.sort();
        names
            .first()
            .map_or(String::new(), |name| format!("@{name}"))
    }

    /// Evaluates one file: a `.bzl` file when `freeze`, else a BUILD file.
    fn evaluate(
        &self,
        path: &str,
        content: &str,
        workspace: &str,
        package: &str,
        chain: &[String],
        freeze: bool,
    ) -> Result<Evaluated, String> {
        if let Some(deep) = nesting(content) {
            let kind = if freeze { ".bzl file" } else { "BUILD file" };
            return Err(format!("{path}:{}: {kind} {deep}", deep.line));
        }
        let ast = AstModule::parse(path, content.to_owned(), &self.dialect)
            .map_err(|e| first_line(&e.to_string()))?;
        let gates = if freeze { None } else { read_gates(&ast) };
        // Only a file with a gate call (or one not read here) is read again for its gates.
        let calls_no_gate = gates.as_ref().is_some_and(|g| g.calls.is_empty());
        let rule_lines = if freeze || calls_no_gate {
            Vec::new()
        } else {
            rule_only_lines(&ast)
        };
        let mut modules: HashMap<String, FrozenModule> = HashMap::new();
        let mut files: HashSet<String> = HashSet::new();
        if freeze {
            files.insert(path.to_owned());
        }
        let mut loaded_names: HashSet<String> = HashSet::new();
        // The names the loads bind to opaque symbols; None once one binds the tree's own code.
        let mut callees: Option<HashMap<String, String>> =
            (!freeze && !self.interpret_all).then(HashMap::new);
        for load in ast.loads() {
            for (local, exported) in &load.symbols {
                let bound_twice = !loaded_names.insert((*local).to_owned());
                if let Some(found) = callees.as_mut() {
                    let origin = format!("{}%{exported}", load.module_id);
                    found.insert((*local).to_owned(), origin);
                    if bound_twice {
                        callees = None;
                    }
                }
            }
            let module = match self.resolve(load.module_id, workspace, package) {
                Target::File {
                    path: file,
                    package: pkg,
                } => match &*self.load_bzl(&file, &pkg, chain) {
                    Ok(loaded) => {
                        callees = None;
                        files.extend(loaded.files.iter().cloned());
                        loaded.module.clone()
                    }
                    Err(error) => return Err(error.clone()),
                },
                Target::Missing { path: file } => {
                    files.insert(file);
                    self.opaque_module(load.module_id, load.symbols.values().copied())?
                }
                Target::Opaque(label) => {
                    self.opaque_module(&label, load.symbols.values().copied())?
                }
            };
            modules.insert(load.module_id.to_owned(), module);
        }
        let mut files: Vec<String> = files.into_iter().collect();
        files.sort();
        if let Some(records) =
            callees.and_then(|callees| plain_records(&ast, path, &callees, &self.global_names))
        {
            return Ok(Evaluated {
                module: None,
                records,
                files,
                rule_lines,
                gates,
            });
        }
        if let Some(what) = unmodelled(&ast) {
            return Err(format!("{path}: {what}"));
        }
        if content.contains(RESERVED) {
            return Err(format!(
                "{path}: a name starting with {RESERVED}, which this reading keeps for itself"
            ));
        }
        let ast = checked_module(&ast, path, content, &self.dialect)?;
        let directory = path.rsplit_once('/').map_or("", |(d, _)| d);
        let repo = self.repository_name(workspace);
        let context = Context {
            package: package.to_owned(),
            repo: repo.clone(),
            files: self
                .tree
                .filter(|_| !freeze)
                .map(|tree| PackageFiles::new(tree, directory)),
            ..Context::default()
        };
        let loader = Loader { modules: &modules };
        let unknown = unknown_names(content, &self.global_names, &loaded_names);
        let module = Module::with_temp_heap(|module| -> Result<Option<FrozenModule>, String> {
            for name in &unknown {
                module.set(
                    name,
                    module.heap().alloc(Magic::Rule {
                        kind: name.clone(),
                        implicit: Vec::new(),
                    }),
                );
            }
            module.set(
                "Label",
                module.heap().alloc(Magic::LabelFn {
                    package: package.to_owned(),
                    repo: repo.clone(),
                    main_names: self.repositories.own.get("").cloned().unwrap_or_default(),
                }),
            );
            guess::take(); // a note an earlier file's failed run left on this thread
            {
                let mut eval = Evaluator::new(&module);
                eval.set_loader(&loader);
                eval.extra = Some(&context);
                // A backstop: the checked loops (`checked.rs`) stop first, with a line.
                eval.set_max_tick_count(2 * MAX_STEPS)
                    .map_err(|e| first_line(&e.to_string()))?;
                eval.set_max_heap_size(MAX_HEAP_BYTES)
                    .map_err(|e| first_line(&e.to_string()))?;
                // The collector copies values recursively, once per level of nesting; the
                // heap's limit is on its peak anyway.
                eval.disable_gc();
                let stop = |e: starlark::Error, eval: &Evaluator<'_, '_, '_>| {
                    let last_loop = context.last_loop.borrow();
                    stopped(&e, path, eval, last_loop.as_ref())
                        .unwrap_or_else(|| first_line(&e.to_string()))
                };
                eval.eval_module(ast, &self.globals)
                    .map_err(|e| stop(e, &eval))?;
                if freeze {
                    // Freezing copies the module's values recursively, as collecting does.
                    let values: Vec<_> = module.names().filter_map(|n| module.get(&n)).collect();
                    check_walk(values.into_iter(), &mut eval).map_err(|e| stop(e, &eval))?;
                }
            }
            if let Some(what) = guess::take() {
                // Its labels may follow an answer Bazel would not give: not this reading.
                return Err(format!(
                    "{path}: the evaluator only approximates {what}, which Bazel may see otherwise"
                ));
            }
            if freeze {
                Ok(Some(module.freeze().map_err(|e| format!("{e:?}"))?))
            } else {
                Ok(None)
            }
        })?;
        Ok(Evaluated {
            module,
            records: context.records.into_inner(),
            files,
            rule_lines,
            gates,
        })
    }
}

/// What in `ast` this interpreter would compute otherwise than Bazel 4.2.3; None if
/// nothing. A macro could pick its labels by the difference, so the file goes to the
/// static reader. Documentation (a docstring, a `doc = ...` argument) computes nothing
/// and may hold any text.
fn unmodelled(ast: &AstModule) -> Option<&'static str> {
    let mut docstrings = Vec::new();
    docstrings_of(ast.statement(), &mut docstrings);
    let uses = Uses::of(ast);
    let mut found = None;
    ast.statement().visit_expr(|expression| {
        walk(expression, &mut |e| {
            if found.is_none() {
                found = unmodelled_expression(e, &docstrings, &uses);
            }
        })
    });
    found.or_else(|| unmodelled_statement(ast.statement()))
}

/// Why the interpreter computes `e` otherwise than Bazel, None if it does not.
fn unmodelled_expression(e: &AstExpr, docstrings: &[Span], uses: &Uses) -> Option<&'static str> {
    let text = match &e.node {
        Expr::Literal(AstLiteral::String(text)) if !docstrings.contains(&e.span) => {
            Some(text.node.as_str())
        }
        Expr::FString(f) => Some(f.format.node.as_str()),
        _ => None,
    };
    match &e.node {
        // Bazel's strings are Latin-1 bytes (`len("é")` is 2 there), and it neither
        // escapes nor upper-cases "\303\251" as this interpreter does.
        _ if text.is_some_and(|t| !t.is_ascii()) => {
            Some("a string holds characters outside ASCII, which Bazel reads as bytes")
        }
        // `repr()` prints DEL raw in Bazel, escaped here; no BUILD file needs either.
        _ if text.is_some_and(|t| t.chars().any(|c| c.is_ascii() && unlike_bazel_char(c))) => {
            Some("a string holds a control character, which Bazel prints otherwise")
        }
        Expr::Dot(_, name) if name.node == "elems" => {
            Some("str.elems() is a list in Bazel 4.2.3 and an iterable here")
        }
        // `"".upper` not called: Bazel types and prints a bound method otherwise.
        Expr::Dot(_, name) if is_method(name.node.as_str()) && !uses.called(e) => {
            Some("a method taken as a value, which Bazel types and prints otherwise")
        }
        // `"abc".find("", 5)` is 3 in Bazel (a start past the end is the end), -1 here.
        Expr::Call(function, arguments)
            if arguments.args.len() > 1
                && matches!(&function.node, Expr::Dot(_, name) if BOUNDED_STRING_METHODS.contains(&name.node.as_str())) =>
        {
            Some("a string search given a start or an end, which Bazel bounds otherwise")
        }
        Expr::Op(_, BinOp::LeftShift, _) => Some(LEFT_SHIFT),
        Expr::Op(_, BinOp::Divide, _) | Expr::Literal(AstLiteral::Float(_)) => Some(FLOAT),
        Expr::Identifier(name) if name.node.ident == "range" && !uses.iterated_range(e) => {
            Some("a range() kept as a value, which Bazel prints otherwise (range(0, 3))")
        }
        _ => None,
    }
}

/// `x <<= n`, `x /= n` anywhere in `statement`: as their operators (`unmodelled_expression`).
fn unmodelled_statement(statement: &AstStmt) -> Option<&'static str> {
    let found = match &statement.node {
        Stmt::AssignModify(_, AssignOp::LeftShift, _) => Some(LEFT_SHIFT),
        Stmt::AssignModify(_, AssignOp::Divide, _) => Some(FLOAT),
        _ => None,
    };
    let mut inner = None;
    statement.visit_stmt(|s| inner = inner.or_else(|| unmodelled_statement(s)));
    found.or(inner)
}

/// starlark-rust shifts a small int within 32 bits (`1 << 31` is -2147483648 there).
const LEFT_SHIFT: &str = "`<<`, which this interpreter wraps at 2^31 and Bazel does not";
/// Bazel 4.2.3 prints floats otherwise (`str(123456789.0)` keeps every digit there).
const FLOAT: &str = "a float, which Bazel prints otherwise";

/// The methods of Bazel's and this interpreter's lists and dicts; those of strings are
/// `STRING_METHOD_NAMES`.
const CONTAINER_METHODS: [&str; 14] = [
    "append",
    "clear",
    "extend",
    "insert",
    "pop",
    "remove",
    "get",
    "items",
    "keys",
    "popitem",
    "setdefault",
    "update",
    "values",
    "union",
];

/// Whether `name` is a method of a string, a list or a dict.
fn is_method(name: &str) -> bool {
    STRING_METHOD_NAMES.contains(&name) || CONTAINER_METHODS.contains(&name)
}

/// Where in a file an expression's value is consumed on the spot.
#[derive(Default)]
struct Uses {
    /// Functions called right away (`x.upper` in `x.upper()`).
    called: HashSet<Span>,
    /// `range` in a `range(...)` that is iterated (`for i in range(n)`, `i in range(n)`):
    /// the range itself is never printed or kept.
    iterated_ranges: HashSet<Span>,
}

impl Uses {
    fn of(ast: &AstModule) -> Uses {
        let mut uses = Uses::default();
        let mut iterated: Vec<&AstExpr> = Vec::new();
        for_iterables(ast.statement(), &mut iterated);
        ast.statement().visit_expr(|expression| {
            walk(expression, &mut |e| match &e.node {
                Expr::Call(function, _) => {
                    uses.called.insert(function.span);
                }
                Expr::Op(_, BinOp::In | BinOp::NotIn, over) => iterated.push(over),
                Expr::ListComprehension(_, first, clauses)
                | Expr::DictComprehension(_, first, clauses) => {
                    iterated.push(&first.over);
                    iterated.extend(clauses.iter().filter_map(|clause| match clause {
                        Clause::For(clause) => Some(&clause.over),
                        Clause::If(_) => None,
                    }));
                }
                _ => {}
            })
        });
        for over in iterated {
            if let Expr::Call(function, _) = &over.node {
                if matches!(&function.node, Expr::Identifier(name) if name.node.ident == "range") {
                    uses.iterated_ranges.insert(function.span);
                }
            }
        }
        uses
    }

    fn called(&self, e: &AstExpr) -> bool {
        self.called.contains(&e.span)
    }

    fn iterated_range(&self, e: &AstExpr) -> bool {
        self.iterated_ranges.contains(&e.span)
    }
}

/// What the `for` statements in `statement` iterate over.
fn for_iterables<'a>(statement: &'a AstStmt, found: &mut Vec<&'a AstExpr>) {
    if let Stmt::For(r#for) = &statement.node {
        found.push(&r#for.over);
    }
    statement.visit_stmt(|inner| for_iterables(inner, found));
}

/// Where the docstrings of `statement` and the statements inside it are.
fn docstrings_of(statement: &AstStmt, found: &mut Vec<Span>) {
    if let Stmt::Expression(e) = &statement.node {
        if matches!(e.node, Expr::Literal(AstLiteral::String(_))) {
            found.push(e.span);
        }
    }
    statement.visit_stmt(|inner| docstrings_of(inner, found));
}

/// `f` on `expression` and on every expression inside it, but `doc = ...` arguments.
fn walk<'a>(expression: &'a AstExpr, f: &mut dyn FnMut(&'a AstExpr)) {
    f(expression);
    if let Expr::Call(function, arguments) = &expression.node {
        walk(function, f);
        for argument in &arguments.args {
            if !matches!(&argument.node, ArgumentP::Named(name, _) if name.node == "doc") {
                walk(argument.node.expr(), f);
            }
        }
        return;
    }
    expression.node.visit_expr(|inner| walk(inner, f));
}

/// The lines of `ast`'s top-level statements that are calls of anything but the gate
/// function (or a name a `load()` binds to it), less any line another statement shares.
///
/// Such a statement binds no name and declares no gate, so the static reader finds
/// the same `oracle_gate(...)` call, on the same lines, without it.
fn rule_only_lines(ast: &AstModule) -> Vec<(usize, usize)> {
    let gate_names: HashSet<&str> = bound_names(ast, GATE_FUNCTION).into_iter().collect();
    let statements = top_level(ast);
    let mut skipped: Vec<(usize, usize)> = Vec::new();
    let mut kept: HashSet<usize> = HashSet::new();
    for statement in statements {
        let span = ast.file_span(statement.span).resolve_span();
        // A span ending at column 0 ends with the previous line's newline.
        let last = if span.end.column == 0 && span.end.line > span.begin.line {
            span.end.line - 1
        } else {
            span.end.line
        };
        let lines = (span.begin.line + 1, last + 1);
        if is_rule_call(statement, &gate_names) {
            skipped.push(lines);
        } else {
            kept.extend(lines.0..=lines.1);
        }
    }
    skipped
        .into_iter()
        .filter(|(first, last)| !(*first..=*last).any(|line| kept.contains(&line)))
        .collect()
}

/// Whether `statement` is a bare call of a function other than a gate name.
fn is_rule_call(statement: &AstStmt, gate_names: &HashSet<&str>) -> bool {
    let Stmt::Expression(expression) = &statement.node else {
        return false;
    };
    let Expr::Call(function, _) = &expression.node else {
        return false;
    };
    match &function.node {
        Expr::Identifier(name) => !gate_names.contains(name.node.ident.as_str()),
        // `native.oracle_gate` is not the gate the static reader looks for either.
        Expr::Dot(..) => true,
        _ => false,
    }
}

/// The gate error for an evaluation of `path` that `error` stopped at a limit
/// (`limits.rs`): `file:line: Starlark evaluation stopped ...`, naming where the limit
/// was reached (for the interpreter's own limits, the `last_loop` started); None for
/// any other error.
fn stopped(
    error: &starlark::Error,
    path: &str,
    eval: &Evaluator<'_, '_, '_>,
    last_loop: Option<&FileSpan>,
) -> Option<String> {
    let limit = match error.kind() {
        ErrorKind::Other(inner) => inner.downcast_ref::<Limit>(),
        _ => None,
    };
    // The limits the interpreter checks itself, every thousand steps.
    let reason = match limit {
        Some(limit) => limit.reason(path),
        None if eval.get_total_tick_count() >= 2 * MAX_STEPS => Limit::Steps.reason(path),
        // The sum starlark-rust's check_heap_size_limit() tests; its result type is
        // not public.
        None if eval.heap().peak_allocated_bytes() + eval.frozen_heap().allocated_bytes()
            > MAX_HEAP_BYTES =>
        {
            Limit::Memory.reason(path)
        }
        None => return None,
    };
    // The interpreter's own checks name no line: the loop that ran last is where.
    let place = error
        .span()
        .or(last_loop)
        .map(|span| format!("{}:{}", span.filename(), span.resolve_span().begin.line + 1))
        .unwrap_or_else(|| format!("{path}:1"));
    Some(format!("{place}: {STOPPED} {reason}"))
}

/// The line of a Starlark error that says what went wrong (`error: ...`, after any
/// traceback), else its first line.
fn first_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next().unwrap_or("");
    lines
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(first)
        .to_owned()
}

struct Loader<'a> {
    modules: &'a HashMap<String, FrozenModule>,
}

impl FileLoader for Loader<'_> {
    fn load(&self, path: &str) -> starlark::Result<FrozenModule> {
        self.modules.get(path).cloned().ok_or_else(|| {
            starlark::Error::new_other(std::io::Error::other(format!("cannot load {path}")))
        })
    }
}

/// A module whose every requested symbol is opaque: the repository is not in the tree.
fn opaque_module(label: &str, symbols: &[String]) -> Result<FrozenModule, String> {
    Module::with_temp_heap(|module| {
        for symbol in symbols {
            let origin = format!("{label}%{symbol}");
            module.set(
                symbol,
                module.heap().alloc(Magic::Opaque {
                    origin,
                    strings: Vec::new(),
                }),
            );
        }
        module.freeze().map_err(|e| format!("{e:?}"))
    })
}

const KEYWORDS: [&str; 20] = [
    "and", "as", "break", "continue", "def", "elif", "else", "for", "if", "in", "lambda", "load",
    "not", "or", "pass", "return", "True", "False", "None", "while",
];

/// Identifiers the file uses that neither the globals nor its loads define, over-approximated
/// (every identifier outside strings and comments that does not follow a '.').
fn unknown_names(
    content: &str,
    globals: &HashSet<String>,
    loaded: &HashSet<String>,
) -> Vec<String> {
    let bytes = content.as_bytes();
    let mut names: HashSet<&str> = HashSet::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'"' || c == b'\'' {
            let triple = bytes[i..].starts_with(&[c, c, c]);
            i += if triple { 3 } else { 1 };
            while i < bytes.len() {
                if bytes[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if triple && bytes[i..].starts_with(&[c, c, c]) {
                    i += 3;
                    break;
                }
                if !triple && (bytes[i] == c || bytes[i] == b'\n') {
                    i += 1;
                    break;
                }
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let after_dot = content[..start].trim_end().ends_with('.');
            if !after_dot {
                names.insert(&content[start..i]);
            }
        } else {
            i += 1;
        }
    }
    let mut unknown: Vec<String> = names
        .into_iter()
        .filter(|n| !KEYWORDS.contains(n) && !globals.contains(*n) && !loaded.contains(*n))
        .filter(|n| *n != "Label")
        .map(str::to_owned)
        .collect();
    unknown.sort();
    unknown
}

/// Evaluates every BUILD file, in parallel.
pub fn evaluate_all(
    builds: &[BuildInput<'_>],
    bzl: &HashMap<String, String>,
    repositories: &Repositories,
    tree: Option<&TreeFiles<'_>>,
    interpret_all: bool,
) -> Vec<Outcome> {
    let globals = globals();
    let global_names = globals.names().map(|n| n.as_str().to_owned()).collect();
    let run = Run {
        globals,
        global_names,
        dialect: dialect(),
        bzl,
        repositories,
        modules: Mutex::new(HashMap::new()),
        kept_bytes: AtomicUsize::new(0),
        opaque: Mutex::new(HashMap::new()),
        interpret_all,
        tree,
    };
    builds
        .par_iter()
        .map(|build| {
            // A panic in the interpreter is a file the caller reads the other way, not a
            // crash (nor a message: `mod.rs` keeps the pool's panics quiet).
            let evaluated = catch_unwind(AssertUnwindSafe(|| {
                run.evaluate(
                    build.path,
                    build.content,
                    build.workspace,
                    build.package,
                    &[],
                    false,
                )
            }))
            .unwrap_or_else(|_| Err(format!("{}: the Starlark interpreter failed", build.path)));
            match evaluated {
                Ok(evaluated) => Outcome {
                    records: evaluated.records,
                    loads: evaluated.files,
                    error: String::new(),
                    rule_lines: evaluated.rule_lines,
                    gates: evaluated.gates,
                },
                Err(error) => Outcome {
                    error,
                    ..Outcome::default()
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(files: &[(&str, &str)], builds: &[(&str, &str)]) -> Vec<Outcome> {
        let bzl: HashMap<String, String> = files
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
        let mut repositories = Repositories::default();
        repositories
            .own
            .insert(String::new(), vec!["mono".to_string()]);
        let inputs: Vec<BuildInput> = builds
            .iter()
            .map(|(p, c)| BuildInput {
                path: p,
                package: p.rsplit_once('/').map(|x| x.0).unwrap_or(""),
                workspace: "",
                content: c,
            })
            .collect();
        evaluate_all(&inputs, &bzl, &repositories, None, false)
    }

    #[test]
    fn rule_only_lines_leave_every_gate_and_binding() {
        let content = "load('@oracle_gate//rules:defs.bzl', g = 'oracle_gate')\n\
            py_library(\n    name = 'lib',\n    deps = ['//x'],\n)\n\
            DEPS = ['//y']\n\
            g(name = 'gate', rows = [])\n\
            native.filegroup(name = 'f')\n\
            oracle_gate(name = 'second')\n\
            cc_library(name = 'a'); X = 1\n\
            filegroup(name = 'last')";
        let ast = AstModule::parse("a/BUILD", content.to_owned(), &dialect()).unwrap();
        // py_library (lines 2-5), native.filegroup (8) and the last call (11); not the
        // aliased or plain gate calls, nor a call that shares its line with a binding.
        assert_eq!(rule_only_lines(&ast), vec![(2, 5), (8, 8), (11, 11)]);
    }

    #[test]
    fn the_string_methods_are_the_interpreter_s() {
        // `STRING_METHOD_NAMES` (bazel/read/tables.py) names what the checks cover: a
        // starlark-rust that adds or drops a string method fails here.
        let names = Module::with_temp_heap(|module| {
            let mut eval = Evaluator::new(&module);
            let ast = AstModule::parse("t", "dir('')".to_owned(), &Dialect::Standard).unwrap();
            let listed = eval.eval_module(ast, &Globals::standard()).unwrap();
            let listed = starlark::values::list::ListRef::from_value(listed).unwrap();
            let names: Vec<String> = listed
                .iter()
                .map(|name| name.unpack_str().unwrap().to_owned())
                .collect();
            names
        });
        let mut expected: Vec<String> = STRING_METHOD_NAMES.iter().map(|n| n.to_string()).collect();
        expected.sort();
        assert_eq!(names, expected);
        assert!(BOUNDED_STRING_METHODS
            .iter()
            .all(|name| STRING_METHOD_NAMES.contains(name)));
    }

    /// A BUILD file naming //lib:l when `condition` holds: its labels, or its error.
    fn choosing_by(condition: &str) -> Result<Vec<String>, String> {
        let build = format!("filegroup(name = 'x')\nfilegroup(name = 'a', srcs = ['//lib:l'] if {condition} else [])\n");
        let out = run(&[], &[("a/BUILD", &build)]).remove(0);
        match out.error.as_str() {
            "" => Ok(out.records.into_iter().map(|r| r.label).collect()),
            _ => Err(out.error),
        }
    }

    #[test]
    fn builtins_are_typed_and_printed_as_bazel_does() {
        for condition in [
            "type(len) == 'builtin_function_or_method'",
            "str(len) == '<built-in function len>'",
            "'%s' % [print] == '[<built-in function print>]'",
            "'{}'.format(fail) == '<built-in function fail>'",
            "type(json.encode) == 'builtin_function_or_method'",
            "type(lambda: 1) == 'function'",
            "existing_rules() and existing_rule('x')['name'] == 'x'",
            "hasattr(struct(a = 1), 'a') and getattr(struct(a = 1), 'b', 2) == 2",
            "hasattr(Label('//a:b'), 'workspace_root')",
            "sorted(['bb', 'a'], key = len) == ['a', 'bb']",
            "[i for i in range(3) if i in range(1, 3)] == [1, 2]",
            "str(print('x')) == 'None'",
            "json.decode('[1, \"a\"]') == [1, 'a']",
            "-(1 >> 1) == 0",
        ] {
            assert_eq!(
                choosing_by(condition),
                Ok(vec!["//lib:l".to_owned()]),
                "{condition}"
            );
        }
    }

    #[test]
    fn what_bazel_computes_otherwise_is_not_trusted() {
        for condition in [
            "not hasattr('', 'removeprefix')",
            "hasattr(1, 'real')",
            "len(dir('')) == 30",
            "dir(struct(a = 1)) == ['a', 'to_json', 'to_proto']",
            "hasattr(struct(a = 1), 'to_json')",
            "getattr([], 'clear', None) != None",
            "getattr('', 'upper') != None",
            "hasattr(Label('//a:b'), 'repo_name')",
            "str(''.upper) == '<built-in method upper of string value>'",
            "str({}.get) != None",
            "str(json.encode) != None",
            "type(json) == 'json'",
            "str(depset([1])) == 'depset([1])'",
            "type(depset([])) == 'depset'",
            "str(range(3)) == 'range(0, 3)'",
            "list(range(3)) == [0, 1, 2]",
            "repr('\\177') == '\"\\177\"'",
            "repr('\\x01') != None",
            "repr(chr(127)) != None",
            "json.decode('\"\\\\u007f\"') != None",
            "json.decode('1.5') != None",
            "-(1 << 31) < 0",
            "str(7 / 2) == '3.5'",
            "str(1.5) == '1.5'",
            "str(float(1)) == '1.0'",
            "'abc'.find('', 5) == 3",
            "'abc'.endswith('c', 0, 9)",
            "repr('\\303\\251') == '\"\\303\\251\"'",
            "str(struct(a = 1)) == 'struct(a = 1)'",
            "repr([struct()]) != ''",
            "str(lambda: 1) != ''",
            "json.encode({'b': 1, 'a': 2}) == '{\"a\":2,\"b\":1}'",
            "str(json.decode('{\"b\": 1, \"a\": 2}')) != ''",
        ] {
            // Its reason names Bazel: no parse or evaluation error.
            let error = choosing_by(condition).unwrap_err();
            assert!(error.contains("Bazel"), "{condition}: {error}");
        }
        // As statements too.
        for build in [
            "X = 1\nX <<= 31\n",
            "X = 1\nX /= 2\n",
            "def f():\n    return range(3)\n",
        ] {
            assert!(
                !run(&[], &[("a/BUILD", build)])[0].error.is_empty(),
                "{build}"
            );
        }
    }

    #[test]
    fn constructs() {
        let out = run(
            &[
                ("tools/defs.bzl", "load(':inner.bzl', 'DEPS')\ndef my_group(name, srcs = [], **kwargs):\n    native.filegroup(name = name, srcs = srcs + ['//helpers:h'] + DEPS, **kwargs)\n"),
                ("tools/inner.bzl", "DEPS = ['//deep:d']\nCOMMON = ['//common']\n"),
                ("tools/stamp.bzl", "def _impl(ctx):\n    return []\nstamped = rule(implementation = _impl, attrs = {'srcs': attr.label_list(allow_files = True), '_tool': attr.label(default = ':stamper'), 'x': attr.string(default = '//no')})\nMyInfo = provider(fields = ['a'])\n"),
            ],
            &[
                ("a/BUILD", "load('//tools:defs.bzl', 'my_group')\nload('@mono//tools:inner.bzl', 'COMMON')\nload('@rules_go//go:def.bzl', 'go_library')\nmy_group(name = 't', visibility = ['//vis:x', '//vis:__pkg__'])\nfilegroup(name = 'c', srcs = COMMON + ['//libs/%s' % n for n in ['one', 'two']] + ['//lib:' + n for n in ['x']])\ngo_library(name = 'g', deps = ['//gdep'], embed = select({'//config:opt': ['//sel:a'], '//conditions:default': []}))\nfilegroup(name = 'f', srcs = [], features = select({'//config:f': ['x']}))\n"),
                ("b/BUILD", "load('//tools:stamp.bzl', 'stamped')\nstamped(name = 's', srcs = glob(['*.py']) + select({'//c:d': []}))\ncc_library(name = 'x', deps = [':local', '//b2'] + glob(['x']))\n"),
                ("c/BUILD", "this is not starlark(\n"),
                ("d/BUILD", "load('//missing:x.bzl', 'm')\nm(name = 'q', deps = ['//mm'])\n"),
            ],
        );
        for o in &out {
            println!("{:?}\n", o);
        }
        let labels = |i: usize| {
            out[i]
                .records
                .iter()
                .map(|r| r.label.clone())
                .collect::<Vec<_>>()
        };
        assert!(labels(0).contains(&"//helpers:h".to_string()));
        assert!(labels(0).contains(&"//deep:d".to_string()));
        assert!(labels(0).contains(&"//libs/two".to_string()));
        assert!(labels(0).contains(&"//lib:x".to_string()));
        assert!(labels(0).contains(&"//common".to_string()));
        assert!(labels(0).contains(&"//config:opt".to_string()));
        assert!(labels(0).contains(&"//config:f".to_string()));
        // A macro's visibility reaches its rules: a package group's label is an edge.
        assert!(labels(0).contains(&"//vis:x".to_string()));
        assert!(!labels(0).contains(&"//vis:__pkg__".to_string()));
        // A default is resolved where the rule was declared: the main repository.
        assert!(labels(1).contains(&"@//tools:stamper".to_string()));
        assert!(!labels(1).contains(&"//no".to_string()));
        assert!(labels(1).contains(&"//b2".to_string()));
        assert!(!out[2].error.is_empty());
        assert!(labels(3).contains(&"//mm".to_string()));
    }
}
