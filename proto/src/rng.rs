//! [`SeededRng`]: every random number the protocol draws, from a seed its
//! driver chooses.
//!
//! The state machines never reach for the operating system's randomness.
//! A driver seeds them (from the OS in production, from a test's seed in a
//! simulation), so the same seed and the same inputs give the same bytes.
//!
//! ```text
//!   seed (32 bytes) ──► key                     block i = BLAKE3-keyed(key, i as u64 LE)   (32 bytes)
//!                       counter i ──────────────► next_u64 / fill_bytes take whole blocks'
//!                                                 bytes in order; split() seeds a child
//!                                                 generator from the next block
//! ```
//!
//! BLAKE3 in keyed mode is a PRF, so the output is unpredictable to anyone
//! without the seed, and the state is 40 bytes (a key and a counter) that
//! can be copied or written down. What the protocol draws from it: the
//! replay cache's SipHash keys and ephemeral message nonces, where an
//! attacker who could predict them could aim hash collisions or guess a
//! nonce.
//!
//! ```
//! use bijou_frame::proto::rng::SeededRng;
//!
//! let mut a = SeededRng::from_seed([7; 32]);
//! let mut b = SeededRng::from_seed([7; 32]);
//! assert_eq!(a.next_u64(), b.next_u64());
//! let mut child = a.split();
//! assert_ne!(child.next_u64(), b.next_u64());
//! ```

use core::fmt;

/// A deterministic generator over BLAKE3 in keyed mode; see the
/// [module docs](self).
#[derive(Clone, PartialEq, Eq)]
pub struct SeededRng {
    key: [u8; 32],
    /// Blocks drawn so far.
    counter: u64,
}

impl SeededRng {
    /// A generator that starts from `seed`.
    #[must_use]
    pub const fn from_seed(seed: [u8; 32]) -> Self {
        Self {
            key: seed,
            counter: 0,
        }
    }

    /// A generator seeded from the operating system's randomness
    /// (`getrandom`). Should the OS refuse, the seed comes from std's
    /// per-process hash keys (also drawn from the OS), never a constant.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn from_os() -> Self {
        let mut seed = [0u8; 32];
        if getrandom::fill(&mut seed).is_err() {
            use core::hash::{BuildHasher, Hasher};
            for chunk in seed.chunks_mut(8) {
                let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
                hasher.write_u64(0x6269_6a6f_7573_6565);
                chunk.copy_from_slice(&hasher.finish().to_le_bytes()[..chunk.len()]);
            }
        }
        Self::from_seed(seed)
    }

    fn next_block(&mut self) -> [u8; 32] {
        let block = blake3::keyed_hash(&self.key, &self.counter.to_le_bytes());
        self.counter = self.counter.wrapping_add(1);
        *block.as_bytes()
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let block = self.next_block();
        let mut word = [0u8; 8];
        word.copy_from_slice(&block[..8]);
        u64::from_le_bytes(word)
    }

    /// Fills `out` with random bytes.
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(32) {
            let block = self.next_block();
            chunk.copy_from_slice(&block[..chunk.len()]);
        }
    }

    /// `N` random bytes.
    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        self.fill_bytes(&mut out);
        out
    }

    /// An independent generator seeded from this one's next block: what
    /// each part of a state machine that draws on its own gets.
    #[must_use]
    pub fn split(&mut self) -> Self {
        Self::from_seed(self.next_block())
    }
}

impl fmt::Debug for SeededRng {
    /// Never shows the key: it would let a reader predict every draw.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeededRng")
            .field("counter", &self.counter)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_stream_and_another_seed_another() {
        let mut a = SeededRng::from_seed([1; 32]);
        let mut b = SeededRng::from_seed([1; 32]);
        let mut c = SeededRng::from_seed([2; 32]);
        let (x, y, z): ([u8; 100], [u8; 100], [u8; 100]) = (a.bytes(), b.bytes(), c.bytes());
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn blocks_are_blake3_keyed_hashes_of_the_counter() {
        let mut rng = SeededRng::from_seed([9; 32]);
        let first = blake3::keyed_hash(&[9; 32], &0u64.to_le_bytes());
        let second = blake3::keyed_hash(&[9; 32], &1u64.to_le_bytes());
        assert_eq!(rng.bytes::<32>(), *first.as_bytes());
        let mut word = [0u8; 8];
        word.copy_from_slice(&second.as_bytes()[..8]);
        assert_eq!(rng.next_u64(), u64::from_le_bytes(word));
    }

    #[test]
    fn a_split_generator_is_independent_of_its_parent() {
        let mut parent = SeededRng::from_seed([3; 32]);
        let mut twin = parent.clone();
        let mut child = parent.split();
        twin.next_u64(); // the block the child was seeded from
        assert_eq!(parent.next_u64(), twin.next_u64());
        assert_ne!(
            child.bytes::<32>(),
            SeededRng::from_seed([3; 32]).bytes::<32>()
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let rng = SeededRng::from_seed([0xab; 32]);
        assert!(!format!("{rng:?}").contains("171"));
    }

    #[test]
    fn os_seeded_generators_differ() {
        assert_ne!(
            SeededRng::from_os().bytes::<32>(),
            SeededRng::from_os().bytes::<32>()
        );
    }
}
