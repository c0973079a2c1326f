//! Fixed vectors and oracles for `bijou-signing`: the wire layout built by
//! hand and signed with bare ed25519-dalek, digests against bare BLAKE3,
//! RFC 8032's test vectors through our `Identity`, determinism, zero-copy
//! decoding, and the accessors of `Signed`/`Verified`.

use crate::signing_support::*;
use bijou_codec::Wire;
use bijou_signing::{
    ed25519_dalek::{self, Signature, Signer as _, SigningKey, VerifyingKey},
    strict, Blob, BlobMismatch, Digest, Identity, Payload, PeerId, Signed, Verified,
};
use bytes::Bytes;

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn wire_layout_matches_a_hand_built_message_signed_by_bare_dalek() {
    let key = key(7);
    let c = commit(2);
    let sealed = Signed::seal(&key, &c).unwrap();

    // Schema | Disc | Issuer | Tree | BlobDigest | ParentCount | BlobSize | Parents
    let mut fields = Vec::new();
    fields.extend_from_slice(&[0x11; 32]);
    fields.extend_from_slice(blake3::hash(b"blob contents").as_bytes());
    fields.push(2);
    fields.push(13); // bijou64(13), one byte
    fields.extend_from_slice(&[1; 32]);
    fields.extend_from_slice(&[2; 32]);
    let mut message = b"TST\x00".to_vec();
    message.push(0x00);
    message.extend_from_slice(key.verifying_key().as_bytes());
    message.extend_from_slice(&fields);
    let signature = key.sign(&message);
    let mut expected = message.clone();
    expected.extend_from_slice(&signature.to_bytes());

    assert_eq!(sealed.as_bytes(), &expected[..]);
    assert_eq!(sealed.len(), 4 + 1 + 32 + 32 + 32 + 1 + 1 + 64 + 64);
    assert_eq!(*sealed.signature(), signature);

    let verified = sealed.verify_strict().unwrap();
    assert_eq!(verified.payload(), &c);
    // Digest: BLAKE3(Schema || fields); no discriminant, issuer, signature.
    let mut hashed = b"TST\x00".to_vec();
    hashed.extend_from_slice(&fields);
    assert_eq!(
        verified.digest().as_bytes(),
        blake3::hash(&hashed).as_bytes()
    );
    assert_eq!(c.digest().unwrap(), verified.digest());
}

#[test]
fn a_type_without_discriminant_has_no_discriminant_byte() {
    let key = key(8);
    let p = Plain {
        value: 300,
        data: b"abc".to_vec(),
    };
    let sealed = Signed::seal(&key, &p).unwrap();
    let mut message = b"TPL\x00".to_vec();
    message.extend_from_slice(key.verifying_key().as_bytes());
    message.extend_from_slice(&[0xF8, 0x34, 0x00, 0x03, b'a', b'b', b'c']);
    assert_eq!(&sealed.as_bytes()[..message.len()], &message[..]);
    assert_eq!(sealed.len(), message.len() + 64);
    assert_eq!(
        &sealed.as_bytes()[message.len()..],
        &key.sign(&message).to_bytes()[..]
    );
    let verified = sealed.verify_strict().unwrap();
    let mut hashed = b"TPL\x00".to_vec();
    hashed.extend_from_slice(&message[36..]);
    assert_eq!(
        verified.digest().as_bytes(),
        blake3::hash(&hashed).as_bytes()
    );
}

#[test]
fn rfc8032_vectors_through_our_signer_and_strict_verify() {
    // RFC 8032 section 7.1, TEST 1, TEST 2 and TEST 3.
    let vectors = [
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
             5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da\
             085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
            "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac\
             18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
        ),
    ];
    for (secret, public, message, signature) in vectors {
        let key = SigningKey::from_bytes(&unhex(secret).try_into().unwrap());
        assert_eq!(key.peer_id().as_bytes()[..], unhex(public)[..]);
        let ours = Identity::sign_message(&key, &unhex(message)).unwrap();
        assert_eq!(ours.to_bytes()[..], unhex(signature)[..]);
        let vk = VerifyingKey::from_bytes(&unhex(public).try_into().unwrap()).unwrap();
        assert_eq!(strict::verify(&vk, &unhex(message), &ours), Ok(()));
    }
}

#[test]
fn sealing_is_deterministic() {
    let key = key(9);
    for c in [commit(0), commit(1), commit(3)] {
        let a = Signed::seal(&key, &c).unwrap();
        let b = Signed::seal(&key, &c).unwrap();
        assert_eq!(a.as_bytes(), b.as_bytes());
        assert_eq!(a, b);
        let (va, vb) = (a.verify_strict().unwrap(), b.verify_strict().unwrap());
        assert_eq!(va.digest(), vb.digest());
    }
    let p = Plain {
        value: u64::MAX,
        data: vec![0; 300],
    };
    assert_eq!(
        Signed::seal(&key, &p).unwrap().as_bytes(),
        Signed::seal(&key, &p).unwrap().as_bytes()
    );
}

#[test]
fn one_content_two_issuers_two_messages_one_digest() {
    let c = commit(1);
    let a = sealed(1, &c).verify_strict().unwrap();
    let b = sealed(2, &c).verify_strict().unwrap();
    assert_ne!(a.as_bytes(), b.as_bytes());
    assert_ne!(a.peer_id(), b.peer_id());
    assert_eq!(a.digest(), b.digest());
    // The discriminant is not hashed either: Twin's digest equals Commit's.
    let twin = sealed(1, &Twin(c.clone())).verify_strict().unwrap();
    assert_eq!(twin.digest().as_bytes(), a.digest().as_bytes());
}

#[test]
fn decoding_keeps_the_input_bytes_without_copying() {
    let wire = sealed(3, &commit(2)).into_bytes();
    let decoded = Signed::<Commit>::decode(wire.clone()).unwrap();
    assert_eq!(decoded.as_bytes().as_ptr(), wire.as_ptr());
    let verified = decoded.verify_strict().unwrap();
    assert_eq!(verified.as_bytes().as_ptr(), wire.as_ptr());
    assert_eq!(verified.to_bytes(), wire);

    // Embedded: three signed items back to back inside a larger buffer.
    let items = [commit(0), commit(1), commit(3)];
    let mut buf = b"HEAD".to_vec();
    for c in &items {
        buf.extend_from_slice(sealed(4, c).as_bytes());
    }
    buf.extend_from_slice(b"TAIL");
    let buf = Bytes::from(buf);
    // One reader over the whole buffer: each item is a zero-copy slice of
    // it, and the reader stops exactly after each signature.
    let mut r = bijou_codec::Reader::new(&buf);
    r.bytes("head", 4).unwrap();
    for c in &items {
        let at = r.offset();
        let signed = Signed::<Commit>::read_from(&mut r).unwrap();
        assert_eq!(signed.as_bytes().as_ptr(), buf[at..].as_ptr());
        assert_eq!(r.offset() - at, signed.len());
        assert_eq!(signed.verify_strict().unwrap().payload(), c);
    }
    assert_eq!(r.rest(), b"TAIL");
}

#[test]
fn accessors_agree() {
    let key = key(5);
    let c = commit(1);
    let signed = Signed::seal(&key, &c).unwrap();
    assert_eq!(signed.verifying_key(), Ok(key.verifying_key()));
    assert_eq!(signed.peer_id(), PeerId::from(key.verifying_key()));
    assert_eq!(signed.digest(), c.digest().unwrap());
    assert!(!signed.is_empty());
    let verified: Verified<Commit> = signed.verify_strict().unwrap();
    assert_eq!(verified.issuer(), key.verifying_key());
    assert_eq!(verified.peer_id(), key.peer_id());
    assert_eq!(verified.signed(), &signed);
    assert_eq!(verified.clone().into_payload(), c);
    assert_eq!(
        verified.clone().into_signed().into_bytes(),
        signed.to_bytes()
    );
    assert_eq!(verified.into_payload(), c);
    let debug = format!("{signed:?}");
    assert!(debug.contains(&key.peer_id().to_string()));
    assert!(
        !debug.contains("parents"),
        "Debug must not show the payload"
    );
}

#[test]
fn encode_of_decode_is_the_input() {
    // Rebuild the wire form from the decoded parts and compare.
    for c in [commit(0), commit(2), commit(5)] {
        let wire = sealed(6, &c).into_bytes();
        let verified = Signed::<Commit>::decode(wire.clone())
            .unwrap()
            .verify_strict()
            .unwrap();
        let mut rebuilt = Commit::SCHEMA.to_vec();
        rebuilt.push(Commit::DISCRIMINANT.unwrap());
        rebuilt.extend_from_slice(verified.issuer().as_bytes());
        verified.payload().encode_into(&mut rebuilt).unwrap();
        rebuilt.extend_from_slice(&verified.signed().signature().to_bytes());
        assert_eq!(rebuilt, wire);
    }
}

#[test]
fn blob_ids_are_bare_blake3() {
    for len in [0usize, 1, 63, 64, 1024, 1025, 64 * 1024 + 7] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let blob = Blob::new(bytes.clone());
        assert_eq!(blob.digest().as_bytes(), blake3::hash(&bytes).as_bytes());
        let meta = blob.meta();
        assert_eq!(meta.size(), len as u64);
        assert_eq!(meta.digest(), blob.digest());
        let verified = meta.verify(Blob::new(bytes.clone())).unwrap();
        assert_eq!(verified.blob().as_bytes(), &bytes[..]);
        assert_eq!(blob.clone().into_verified().meta(), meta);
    }
}

#[test]
fn signed_blob_meta_checks_the_blob() {
    let blob = Blob::from_static(b"blob contents");
    let verified = sealed(2, &commit(1)).verify_strict().unwrap();
    let ok = verified.verify_blob(blob.clone()).unwrap();
    assert_eq!(ok.into_blob(), blob);

    // Same size, other bytes: digest mismatch.
    let other = Blob::from_static(b"blob CONTENTS");
    assert_eq!(
        verified.verify_blob(other.clone()),
        Err(BlobMismatch::Digest {
            expected: blob.digest(),
            actual: other.digest(),
        })
    );
    // Other size: size mismatch (reported before hashing).
    assert_eq!(
        verified.verify_blob(Blob::from_static(b"blob contents!")),
        Err(BlobMismatch::Size {
            expected: 13,
            actual: 14,
        })
    );
    // A meta whose digest matches but size lies.
    let lying = bijou_signing::BlobMeta::new(blob.digest(), 12);
    assert!(matches!(
        lying.verify(blob.clone()),
        Err(BlobMismatch::Size {
            expected: 12,
            actual: 13
        })
    ));
    let wrong_digest = bijou_signing::BlobMeta::new(Digest::from_bytes([0; 32]), 13);
    assert!(matches!(
        wrong_digest.verify(blob),
        Err(BlobMismatch::Digest { .. })
    ));
}

#[test]
fn bare_dalek_agrees_on_honest_signatures() {
    let key = key(10);
    let signed = Signed::seal(&key, &commit(2)).unwrap();
    let message = &signed.as_bytes()[..signed.len() - 64];
    let signature =
        Signature::from_bytes(&signed.as_bytes()[signed.len() - 64..].try_into().unwrap());
    assert!(key
        .verifying_key()
        .verify_strict(message, &signature)
        .is_ok());
    assert!(ed25519_dalek::verify_batch(&[message], &[signature], &[key.verifying_key()]).is_ok());
}

/// A signer that is not a `SigningKey`: a weak key and a fixed signature,
/// or one that always fails.
struct OddSigner {
    fails: bool,
}

impl Identity for OddSigner {
    fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey::from_bytes(&strict::SMALL_ORDER_POINTS[0]).unwrap()
    }

    fn sign_message(&self, _message: &[u8]) -> Result<Signature, ed25519_dalek::SignatureError> {
        if self.fails {
            Err(ed25519_dalek::SignatureError::new())
        } else {
            Ok(Signature::from_bytes(&[0; 64]))
        }
    }
}

#[test]
fn other_signers_plug_in_and_their_failures_are_typed() {
    let weak = Signed::seal(&OddSigner { fails: false }, &commit(1)).unwrap();
    assert_eq!(
        weak.verify_strict().unwrap_err(),
        bijou_signing::VerifyError::WeakIssuer {
            issuer: PeerId::from_bytes(strict::SMALL_ORDER_POINTS[0]),
        }
    );
    let decoded = Signed::<Commit>::decode(weak.to_bytes()).unwrap();
    assert!(decoded.verify_strict().is_err());
    assert!(matches!(
        Signed::seal(&OddSigner { fails: true }, &commit(1)),
        Err(bijou_signing::SealError::Signer { .. })
    ));
    // A count that does not fit its field is an encode error, not a panic.
    let mut big = commit(0);
    big.parents = (0..=255u8).map(|i| [i; 32]).collect();
    assert!(matches!(
        Signed::seal(&key(1), &big),
        Err(bijou_signing::SealError::Encode(_))
    ));
}
