//! The heap `bijou` has allocated, counted by its global allocator, so a
//! server can report what its connections cost (`bijou serve --stats`)
//! with every library and runtime allocation included.
//!
//! The counter is `cap`'s allocator wrapper with its `stats` feature (a
//! few atomic operations per allocation: the count, the total, the peak;
//! no limit set), for every subcommand: every target forbids
//! `unsafe_code`, so none implements `GlobalAlloc` itself. Figures that
//! compare two runs of `bijou` carry it on both sides.

use std::alloc::System;

use cap::Cap;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Bytes allocated now.
pub fn live() -> usize {
    ALLOCATOR.allocated()
}

/// The most bytes allocated at any moment so far.
pub fn peak() -> usize {
    ALLOCATOR.max_allocated()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_sees_an_allocation() {
        let before = peak();
        let block = std::hint::black_box(vec![1u8; 1 << 20]);
        assert!(live() >= block.len());
        assert!(peak() >= before.max(block.len()));
    }
}
