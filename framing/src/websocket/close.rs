use super::{WsFrameError, MAX_CONTROL_PAYLOAD};

/// A close frame's payload, checked: no code, or a code a peer may send
/// with a UTF-8 reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// The status code, if any.
    pub code: Option<u16>,
    /// The reason (empty without a code).
    pub reason: String,
}

/// Checks a close payload: empty, or a code a peer may send and a UTF-8
/// reason.
///
/// # Errors
///
/// [`WsFrameError::CloseOneByte`], [`WsFrameError::InvalidCloseCode`],
/// [`WsFrameError::CloseReasonNotUtf8`].
pub fn parse_close(payload: &[u8]) -> Result<Close, WsFrameError> {
    match payload {
        [] => Ok(Close {
            code: None,
            reason: String::new(),
        }),
        [_] => Err(WsFrameError::CloseOneByte),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            if !valid_close_code(code) {
                return Err(WsFrameError::InvalidCloseCode { code });
            }
            let reason =
                std::str::from_utf8(reason).map_err(|e| WsFrameError::CloseReasonNotUtf8 {
                    valid_up_to: e.valid_up_to(),
                    len: reason.len(),
                })?;
            Ok(Close {
                code: Some(code),
                reason: reason.to_owned(),
            })
        }
    }
}

/// A code a peer may put in a close frame (RFC 6455 7.4, and the IANA
/// registry's 1012-1014).
#[must_use]
pub fn valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// A close frame's payload: the code and a reason cut to fit 123 bytes at
/// a character boundary.
#[must_use]
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_CONTROL_PAYLOAD - 2);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut payload = Vec::with_capacity(2 + end);
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(reason.as_bytes().get(..end).unwrap_or_default());
    payload
}
