//! # bijou-framing
//!
//! Placeholder: this crate is filled in by its own issue.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
