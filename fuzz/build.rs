//! Makes the inspector example includable by the `inspect` target.
//!
//! `examples/inspect.rs` is a binary (its decoder is private, next to a
//! `main`), so the target cannot `#[path]`-include it as a module and call
//! into it. Instead this copies it to `OUT_DIR` without its inner doc
//! comments (`//!`, which `include!` does not accept), and the target
//! `include!`s the copy inside a module of its own, where the inspector's
//! private `inspect` function is in scope. The fuzzed code is the
//! inspector's, byte for byte.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let source = manifest.join("../examples/inspect.rs");
    println!("cargo:rerun-if-changed={}", source.display());
    let text = fs::read_to_string(&source).expect("examples/inspect.rs is readable");
    let mut body = String::with_capacity(text.len());
    for line in text.lines() {
        if !line.trim_start().starts_with("//!") {
            body.push_str(line);
            body.push('\n');
        }
    }
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo")).join("inspect_example.rs");
    fs::write(out, body).expect("OUT_DIR is writable");
}
