//! Native core of oracle-gate, imported from Python as `oracle_gate._native`.
//!
//! The contract (signatures, docstrings, errors) is `python/oracle_gate/_native.pyi`;
//! `oracle_gate._fallback` implements the same functions in pure Python.

mod error;
mod hash;
mod listing;
mod starlark;
mod stat_cache;
mod surface;
mod walk;

use pyo3::prelude::*;

// The Starlark evaluator allocates small objects from every rayon thread at once;
// glibc's malloc spent a quarter of a cold graph's native time in its arenas.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// Every Python-visible item is registered in this one list; pyo3 turns the doc
// comment below into the module docstring.
/// Native core of oracle-gate. Import through oracle_gate.backend, not directly.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(hash::hash_files, m)?)?;
    m.add_function(wrap_pyfunction!(walk::walk_tree, m)?)?;
    m.add_function(wrap_pyfunction!(listing::parse_tree_listing, m)?)?;
    m.add_function(wrap_pyfunction!(listing::split_cat_file_batch, m)?)?;
    m.add_function(wrap_pyfunction!(stat_cache::hash_files_cached, m)?)?;
    m.add_function(wrap_pyfunction!(surface::extract_units, m)?)?;
    m.add_function(wrap_pyfunction!(surface::extract_units_many, m)?)?;
    m.add_function(wrap_pyfunction!(crate::starlark::evaluate_build_files, m)?)?;
    m.add_function(wrap_pyfunction!(crate::starlark::label_ref, m)?)?;
    m.add_class::<crate::starlark::NativeGates>()?;
    Ok(())
}
