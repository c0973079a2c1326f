//! The strict Ed25519 rules, on raw `(key, message, signature)` triples.
//!
//! [`Signed::verify_strict`](crate::Signed::verify_strict) and
//! [`verify_batch`](crate::batch::verify_batch) are thin layers over this module;
//! it is public so the same rules can be checked against published vectors.
//!
//! ```text
//!   Signature (64 bytes)
//!   +---------------- R (32) ----------------+---------------- S (32) ----------------+
//!   | compressed Edwards-y point, LE y,      | scalar, little-endian                  |
//!   | top bit = sign of x                    | must be < L                            |
//!   +----------------------------------------+----------------------------------------+
//!
//!   Accepted iff, in this order (the first failure is reported):
//!     1. S < L                                  else NonCanonicalS
//!     2. A (issuer key) is not of small order   else WeakIssuer
//!     3. R is a canonical encoding              else NonCanonicalR
//!        (y < p, and no sign bit when x = 0)
//!     4. R is not one of the 8 small-order points else SmallOrderR
//!     5. R decodes to a point                    else InvalidR
//!     6. R == [S]B - [H(R || A || M)]A, compared as encodings
//!        (ed25519-dalek's verify_strict)         else BadSignature
//! ```
//!
//! This accept set is exactly `ed25519_dalek::VerifyingKey::verify_strict`'s:
//! check 6 already rejects 1-5 (dalek compares the *canonical* encoding of
//! the computed R with the received bytes, so a non-canonical R never
//! matches). Checks 1-4 are done here as well, with byte comparisons, for
//! three reasons:
//!
//! - they give a typed reason instead of one opaque error;
//! - batch verification skips them (it decompresses R, so it accepts
//!   non-canonical and small-order R, and it never looks at small-order
//!   keys); [`verify_batch`](crate::batch::verify_batch) runs the same checks
//!   first so that it keeps this accept set;
//! - check 1 does not depend on ed25519-dalek's `legacy_compatibility`
//!   feature, which weakens dalek's own `S` check if anything in a build
//!   enables it.
//!
//! Once 3 holds, a small-order R can only be one of the eight canonical
//! encodings of the torsion points, so check 4 is a table lookup and needs
//! no point decompression.

use ed25519_dalek::{Signature, VerifyingKey};

use crate::{PeerId, VerifyError};

/// The group order `L = 2^252 + 27742317777372353535851937790883648493`,
/// little-endian.
pub const GROUP_ORDER: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
];

/// The field prime `p = 2^255 - 19`, little-endian.
pub const FIELD_PRIME: [u8; 32] = [
    0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
];

/// `p - 1`, the y-coordinate of the order-2 point `(0, -1)`.
const Y_MINUS_ONE: [u8; 32] = [
    0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
];

/// `1`, the y-coordinate of the identity `(0, 1)`.
const Y_ONE: [u8; 32] = {
    let mut y = [0u8; 32];
    y[0] = 1;
    y
};

const SIGN_BIT: u8 = 0x80;

/// The canonical encodings of the eight points of small order (the torsion
/// subgroup `E[8]`): identity, the order-2 point, two of order 4 and four of
/// order 8. Any other encoding of these points is non-canonical.
pub const SMALL_ORDER_POINTS: [[u8; 32]; 8] = {
    let order_8_a: [u8; 32] = [
        0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98,
        0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53,
        0xfc, 0x05,
    ];
    let order_8_b: [u8; 32] = [
        0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67,
        0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac,
        0x03, 0x7a,
    ];
    [
        Y_ONE,                    // order 1: (0, 1)
        Y_MINUS_ONE,              // order 2: (0, -1)
        [0; 32],                  // order 4: (+i, 0)
        with_sign_bit([0; 32]),   // order 4: (-i, 0)
        order_8_a,                // order 8
        with_sign_bit(order_8_a), // order 8
        order_8_b,                // order 8
        with_sign_bit(order_8_b), // order 8
    ]
};

const fn with_sign_bit(mut encoding: [u8; 32]) -> [u8; 32] {
    encoding[31] |= SIGN_BIT;
    encoding
}

/// Whether little-endian `a < b`.
fn less_than(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().rev().cmp(b.iter().rev()).is_lt()
}

/// Whether `s` is a canonical scalar, `s < L`.
///
/// ```
/// use bijou_frame::signing::strict::{is_canonical_scalar, GROUP_ORDER};
/// let mut below = GROUP_ORDER;
/// below[0] -= 1;
/// assert!(is_canonical_scalar(&below));
/// assert!(!is_canonical_scalar(&GROUP_ORDER));
/// assert!(!is_canonical_scalar(&[0xFF; 32]));
/// ```
#[must_use]
pub fn is_canonical_scalar(s: &[u8; 32]) -> bool {
    less_than(s, &GROUP_ORDER)
}

/// Whether `encoding` is the canonical encoding of the point it names (if
/// it names one): `y < p`, and the sign bit clear when `x = 0` (`y = ±1`).
/// It does not check that a point with this `y` exists.
///
/// ```
/// use bijou_frame::signing::strict::{is_canonical_point, FIELD_PRIME};
/// assert!(is_canonical_point(&[0; 32]));
/// assert!(!is_canonical_point(&FIELD_PRIME)); // y = p, i.e. y = 0 again
/// let mut minus_identity = [0; 32];
/// minus_identity[0] = 1;
/// minus_identity[31] = 0x80; // (−0, 1)
/// assert!(!is_canonical_point(&minus_identity));
/// ```
#[must_use]
pub fn is_canonical_point(encoding: &[u8; 32]) -> bool {
    let sign = encoding[31] & SIGN_BIT != 0;
    let mut y = *encoding;
    y[31] &= !SIGN_BIT;
    less_than(&y, &FIELD_PRIME) && !(sign && (y == Y_ONE || y == Y_MINUS_ONE))
}

/// Whether `encoding` is one of the eight [`SMALL_ORDER_POINTS`]. Only
/// complete for canonical encodings (see [`is_canonical_point`]).
#[must_use]
pub fn is_small_order_encoding(encoding: &[u8; 32]) -> bool {
    SMALL_ORDER_POINTS.contains(encoding)
}

/// Checks 1-4 of the [module docs](self): byte comparisons, given
/// whether `key` has small order (`key.is_weak()`, three doublings; a
/// `Signed` computes it once, when it parses the key).
pub(crate) fn precheck(
    key: &VerifyingKey,
    key_is_weak: bool,
    signature: &Signature,
) -> Result<(), VerifyError> {
    if !is_canonical_scalar(signature.s_bytes()) {
        return Err(VerifyError::NonCanonicalS);
    }
    if key_is_weak {
        return Err(VerifyError::WeakIssuer {
            issuer: PeerId::from(key),
        });
    }
    let r = signature.r_bytes();
    if !is_canonical_point(r) {
        return Err(VerifyError::NonCanonicalR);
    }
    if is_small_order_encoding(r) {
        return Err(VerifyError::SmallOrderR);
    }
    Ok(())
}

/// Checks 5-6, after [`precheck`] passed.
pub(crate) fn verify_prechecked(
    key: &VerifyingKey,
    message: &[u8],
    signature: &Signature,
) -> Result<(), VerifyError> {
    key.verify_strict(message, signature).map_err(|_| {
        // Only the failure path pays for decompressing R a second time.
        if VerifyingKey::from_bytes(signature.r_bytes()).is_err() {
            VerifyError::InvalidR
        } else {
            VerifyError::BadSignature {
                issuer: PeerId::from(key),
            }
        }
    })
}

/// Verifies one signature with the strict rules of the [module
/// docs](self).
///
/// ```
/// use bijou_frame::signing::{strict, VerifyError};
/// use ed25519_dalek::{Signer, SigningKey};
///
/// let key = SigningKey::from_bytes(&[3; 32]);
/// let signature = key.sign(b"hello");
/// assert_eq!(strict::verify(&key.verifying_key(), b"hello", &signature), Ok(()));
///
/// // S + L is the same signature to a lax verifier; not to this one.
/// let mut bytes = signature.to_bytes();
/// let mut carry = 0u16;
/// for (s, l) in bytes[32..].iter_mut().zip(strict::GROUP_ORDER) {
///     let sum = u16::from(*s) + u16::from(l) + carry;
///     *s = sum as u8;
///     carry = sum >> 8;
/// }
/// let malleated = ed25519_dalek::Signature::from_bytes(&bytes);
/// assert_eq!(
///     strict::verify(&key.verifying_key(), b"hello", &malleated),
///     Err(VerifyError::NonCanonicalS)
/// );
/// ```
///
/// # Errors
///
/// The first failed check, as a [`VerifyError`].
pub fn verify(
    key: &VerifyingKey,
    message: &[u8],
    signature: &Signature,
) -> Result<(), VerifyError> {
    precheck(key, key.is_weak(), signature)?;
    verify_prechecked(key, message, signature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::{constants::EIGHT_TORSION, edwards::CompressedEdwardsY, Scalar};

    #[test]
    fn small_order_table_is_exactly_the_torsion_subgroup() {
        let mut computed: alloc::vec::Vec<[u8; 32]> = EIGHT_TORSION
            .iter()
            .map(|p| p.compress().to_bytes())
            .collect();
        let mut ours = SMALL_ORDER_POINTS.to_vec();
        computed.sort_unstable();
        ours.sort_unstable();
        assert_eq!(computed, ours);
        for encoding in SMALL_ORDER_POINTS {
            assert!(is_canonical_point(&encoding));
            let point = CompressedEdwardsY(encoding).decompress().unwrap();
            assert!(point.is_small_order());
        }
    }

    #[test]
    fn constants_match_curve25519_dalek() {
        // L - 1 is the largest canonical scalar; L itself is not.
        let minus_one = (Scalar::ZERO - Scalar::ONE).to_bytes();
        assert!(is_canonical_scalar(&minus_one));
        let mut l = minus_one;
        l[0] += 1;
        assert_eq!(l, GROUP_ORDER);
        assert!(Option::<Scalar>::from(Scalar::from_canonical_bytes(GROUP_ORDER)).is_none());
    }

    #[test]
    fn canonical_point_agrees_with_recompression() {
        // For every y in a window around 0, 1, p-1 and p, with either sign:
        // an encoding is canonical iff decompress-then-compress returns it.
        let mut ys: alloc::vec::Vec<[u8; 32]> = alloc::vec::Vec::new();
        for low in 0u8..40 {
            let mut y = [0u8; 32];
            y[0] = low;
            ys.push(y);
            let mut high = FIELD_PRIME;
            high[0] = 0xed_u8.wrapping_sub(20).wrapping_add(low); // p-20 .. p+19
            ys.push(high);
        }
        let mut decodable = 0;
        for y in ys {
            for encoding in [y, with_sign_bit(y)] {
                if let Some(point) = CompressedEdwardsY(encoding).decompress() {
                    decodable += 1;
                    let canonical = point.compress().to_bytes() == encoding;
                    assert_eq!(is_canonical_point(&encoding), canonical, "{encoding:02x?}");
                }
            }
        }
        assert!(decodable > 20, "window too small to mean anything");
    }
}
