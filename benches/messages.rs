//! Placeholder; replaced by the messages issue.
fn main() {}
