//! What git prints about a commit's files, parsed: `parse_tree_listing` (`git ls-tree
//! -r -z`) and `split_cat_file_batch` (`git cat-file --batch`).
//!
//! A monorepo commit lists 100,000s of files, and a cold `select` reads one
//! listing in full and tens of thousands of BUILD files; parsing them in Python
//! took about as long as git took to write them.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PySet, PyString};

// pyo3 turns this doc comment into the Python docstring; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// The blobs of a `git ls-tree -r -z` listing: ({path: object id}, {symbolic links}).
#[pyfunction]
pub fn parse_tree_listing<'py>(
    py: Python<'py>,
    listing: &Bound<'py, PyBytes>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PySet>)> {
    let oids = PyDict::new(py);
    let links = PySet::empty(py)?;
    for record in listing.as_bytes().split(|&b| b == 0) {
        let Some((mode, oid, path)) = blob_record(record) else {
            continue;
        };
        let path = decoded(py, path)?;
        if mode == SYMLINK_MODE {
            links.add(&path)?;
        }
        oids.set_item(path, PyString::new(py, ascii(oid)))?;
    }
    Ok((oids, links))
}

/// The mode git gives a symbolic link.
const SYMLINK_MODE: &[u8] = b"120000";

// pyo3 turns this doc comment into the Python docstring; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// The objects of `git cat-file --batch=%(objectsize)` output, in order; None for a
/// missing one. Raises ValueError when the output holds fewer than `count` objects.
#[pyfunction]
pub fn split_cat_file_batch<'py>(
    py: Python<'py>,
    output: &Bound<'py, PyBytes>,
    count: usize,
) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
    let bytes = output.as_bytes();
    let mut objects = Vec::with_capacity(count);
    let mut offset = 0;
    while objects.len() < count {
        let ends_early = || PyValueError::new_err("git cat-file output ends early");
        let header_end = offset + memchr(b'\n', &bytes[offset..]).ok_or_else(ends_early)?;
        let header = &bytes[offset..header_end];
        offset = header_end + 1;
        if header.is_empty() || !header.iter().all(u8::is_ascii_digit) {
            objects.push(None); // "<id> missing"
            continue;
        }
        let size: usize = ascii(header).parse().map_err(|_| ends_early())?;
        let content = bytes.get(offset..offset + size).ok_or_else(ends_early)?;
        objects.push(Some(PyBytes::new(py, content)));
        offset += size + 1;
    }
    Ok(objects)
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// `<mode> blob <oid>\t<path>` split in three; None for another kind of entry.
fn blob_record(record: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let tab = record.iter().position(|&b| b == b'\t')?;
    let (header, path) = (&record[..tab], &record[tab + 1..]);
    let mut fields = header.split(|&b| b == b' ');
    let (mode, kind, oid) = (fields.next()?, fields.next()?, fields.next()?);
    let valid = fields.next().is_none()
        && kind == b"blob"
        && !mode.is_empty()
        && mode.iter().all(|b| (b'0'..=b'7').contains(b))
        && !oid.is_empty()
        && oid
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    valid.then_some((mode, oid, path))
}

fn ascii(bytes: &[u8]) -> &str {
    // Callers pass only bytes `blob_record` checked are octal or hexadecimal digits.
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// A path as Python decodes git's bytes: UTF-8, any other byte as a lone surrogate.
fn decoded<'py>(py: Python<'py>, path: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(path) {
        Ok(text) => Ok(PyString::new(py, text)),
        Err(_) => Ok(PyBytes::new(py, path)
            .call_method1("decode", ("utf-8", "surrogateescape"))?
            .cast_into::<PyString>()?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_records_and_nothing_else() {
        assert_eq!(
            blob_record(b"100644 blob 0a1b\ta/b\tc.py"),
            Some((&b"100644"[..], &b"0a1b"[..], &b"a/b\tc.py"[..]))
        );
        assert_eq!(blob_record(b"160000 commit 0a1b\tsub"), None);
        assert_eq!(blob_record(b"040000 tree 0a1b\tdir"), None);
        assert_eq!(blob_record(b"100644 blob 0A1B\tx"), None);
        assert_eq!(blob_record(b""), None);
    }
}
