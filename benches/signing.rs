//! Placeholder; replaced by its issue.
fn main() {}
