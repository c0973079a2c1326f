//! Lower-case hex for `Debug`/`Display` of ids and digests (no allocation).

use core::fmt;

pub(crate) fn write(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        let hi = DIGITS.get(usize::from(byte >> 4)).copied().unwrap_or(b'?');
        let lo = DIGITS
            .get(usize::from(byte & 0x0F))
            .copied()
            .unwrap_or(b'?');
        write!(f, "{}{}", char::from(hi), char::from(lo))?;
    }
    Ok(())
}
