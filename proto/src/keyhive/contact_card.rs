use alloc::string::String;
use core::fmt::Write as _;

use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::Identity;

use super::envelope::ContactCardJson;
use super::error::KeyhiveError;

/// The label signed to derive our share key.
const PREKEY_LABEL: &[u8] = b"bijou-frame keyhive prekey v1";

fn json_array(out: &mut String, bytes: &[u8]) {
    out.push('[');
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{b}");
    }
    out.push(']');
}

/// The contact card of `signer`: an added prekey, signed by it.
///
/// ```
/// use bijou_proto::keyhive::contact_card;
/// use bijou_signing::ed25519_dalek::SigningKey;
/// let card = contact_card(&SigningKey::from_bytes(&[1; 32]))?;
/// assert!(card.as_str().starts_with(r#"{"Add":{"payload":{"share_key":["#));
/// # Ok::<(), bijou_proto::keyhive::KeyhiveError>(())
/// ```
///
/// Our contact card: keyhive's `ContactCard` (`keyhive_core` 0.7), which
/// introduces an individual by a signed prekey operation, in the JSON a
/// `SUK\0` envelope carries it as.
///
/// ```text
///   {"Add":{"payload":{"share_key":[32 numbers]},"issuer":[32 numbers],"signature":[64 numbers]}}
///
///   signature = Ed25519 by the issuer over the payload's binary form: the
///               32 share-key bytes (a fixed-size tuple, no length)
/// ```
///
/// The share key is an X25519 public key that keyhive would use for group
/// key agreement. We do no key agreement: the key is derived from the
/// signer's own signature over a fixed label (so the same identity always
/// sends the same card) and its secret is never kept.
///
/// # Errors
///
/// [`KeyhiveError::Signer`] if the signer fails.
pub fn contact_card<S: Identity + ?Sized>(signer: &S) -> Result<ContactCardJson, KeyhiveError> {
    let issuer = signer.peer_id();
    let sign_err = |_| KeyhiveError::Signer { issuer };
    let label_sig = signer.sign_message(PREKEY_LABEL).map_err(sign_err)?;
    let secret: [u8; 32] = *blake3::hash(&label_sig.to_bytes()).as_bytes();
    let share_key = SigningKey::from_bytes(&secret)
        .verifying_key()
        .to_montgomery()
        .to_bytes();
    let signature = signer.sign_message(&share_key).map_err(sign_err)?;
    let mut json = String::with_capacity(800);
    json.push_str(r#"{"Add":{"payload":{"share_key":"#);
    json_array(&mut json, &share_key);
    json.push_str(r#"},"issuer":"#);
    json_array(&mut json, issuer.as_bytes());
    json.push_str(r#","signature":"#);
    json_array(&mut json, &signature.to_bytes());
    json.push_str("}}");
    Ok(ContactCardJson::from_json(json))
}
