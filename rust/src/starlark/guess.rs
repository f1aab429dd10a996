//! What a file's evaluation observed of the values `values.rs` only approximates.
//!
//! A rule, the `native` namespace, `select()` or an opaque symbol stands in for
//! what Bazel would hold. Passing one on or calling it is modelled; *looking at*
//! one (`type(select(...))`, `dir(native)`, `hasattr(native, "x")`, `if
//! opaque:`, `str(select(...))`) gives an answer Bazel may not give, and a
//! macro could choose its labels by that answer. The first such look is noted
//! here and the file's evaluation is then not trusted (`eval.rs`): the static
//! reader, which over-approximates, reads it instead.

use std::cell::RefCell;

thread_local! {
    // Per thread: one file is evaluated at a time on a thread, start to end.
    static GUESS: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Notes that the evaluation looked at `what` (the first note of a file is kept).
pub fn guessed(what: impl FnOnce() -> String) {
    GUESS.with(|guess| {
        let mut guess = guess.borrow_mut();
        if guess.is_none() {
            *guess = Some(what());
        }
    });
}

/// The note of the evaluation since the last call, cleared.
pub fn take() -> Option<String> {
    GUESS.with(|guess| guess.borrow_mut().take())
}
