//! Canonical LEB128: the rejection rules, with the known pitfalls.

use bijou_codec::leb128::{self, Leb128Error};

/// Every overlong spelling of `value`: its canonical bytes with the last
/// byte given a continuation bit, followed by `extra - 1` bytes of 0x80 and
/// a final 0x00, for every length up to 10 bytes.
fn overlong_forms(value: u64) -> Vec<Vec<u8>> {
    let mut canonical = Vec::new();
    leb128::encode_to_vec(value, &mut canonical);
    let mut forms = Vec::new();
    for total in canonical.len() + 1..=leb128::MAX_LEN {
        let mut form = canonical.clone();
        *form.last_mut().unwrap() |= 0x80;
        form.resize(total - 1, 0x80);
        form.push(0x00);
        forms.push(form);
    }
    forms
}

#[test]
fn every_overlong_form_of_the_named_values_is_rejected() {
    for value in [0, 1, 127, 128, u64::MAX] {
        let forms = overlong_forms(value);
        if value != u64::MAX {
            assert!(!forms.is_empty());
        }
        for form in forms {
            let lax = leb128::decode_lax(&form);
            let canonical = leb128::decode(&form);
            // The lax decoder reads them as the value (unless the 10th byte
            // is a bare 0x00 after u64::MAX's 10 bytes, impossible here).
            assert_eq!(lax, Ok((value, form.len())), "{form:02X?}");
            assert_eq!(
                canonical,
                Err(Leb128Error::Overlong { len: form.len() }),
                "{form:02X?}"
            );
        }
    }
    // u64::MAX already takes 10 bytes: any longer form is too long.
    let mut eleven = vec![0xFF; 9];
    eleven.extend([0x81, 0x00]);
    assert_eq!(leb128::decode(&eleven), Err(Leb128Error::TooLong));
}

#[test]
fn the_unsigned_varint_pitfall_is_rejected() {
    let bad = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x03];
    assert_eq!(
        leb128::decode(&bad),
        Err(Leb128Error::Overflow { last_byte: 0x03 })
    );
    assert_eq!(
        leb128::decode_lax(&bad),
        Err(Leb128Error::Overflow { last_byte: 0x03 })
    );
    // What unsigned-varint 0.8 makes of it, for the record.
    assert_eq!(
        unsigned_varint::decode::u64(&bad).map(|(v, _)| v).ok(),
        Some(1 << 63),
        "unsigned-varint's behaviour changed; update the docs"
    );
}

#[test]
fn tenth_byte_rules() {
    let mut max = vec![0xFF; 9];
    max.push(0x01);
    assert_eq!(leb128::decode(&max), Ok((u64::MAX, 10)));
    for last in 2..=0x7F {
        max[9] = last;
        assert_eq!(
            leb128::decode(&max),
            Err(Leb128Error::Overflow { last_byte: last })
        );
    }
    for last in 0x80..=0xFF {
        max[9] = last;
        assert_eq!(leb128::decode(&max), Err(Leb128Error::TooLong));
    }
    // A 10th byte of 0x00 is overlong (9 bytes suffice).
    max[9] = 0x00;
    assert_eq!(leb128::decode(&max), Err(Leb128Error::Overlong { len: 10 }));
}

#[test]
fn truncation_at_every_offset_is_incomplete() {
    for value in [0u64, 127, 128, 300, 1 << 35, 1 << 56, u64::MAX] {
        let mut enc = Vec::new();
        leb128::encode_to_vec(value, &mut enc);
        for cut in 0..enc.len() {
            assert_eq!(
                leb128::decode(&enc[..cut]),
                Err(Leb128Error::Incomplete { have: cut }),
                "{value} cut at {cut}"
            );
        }
    }
}
