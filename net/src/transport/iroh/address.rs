use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use ::iroh::{EndpointAddr, PublicKey};
use bijou_signing::hex::{self, ParseHexError};

use super::*;

/// An iroh node id: the Ed25519 public key of an endpoint's QUIC/TLS
/// identity, as 64 lower-case hex digits (the form `subduction_cli`
/// writes as `iroh_node_id=` in its `--ready-file`). Not a Subduction
/// peer id.
///
/// ```
/// use bijou_net::transport::iroh::NodeId;
///
/// let text = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";
/// let id: NodeId = text.parse()?;
/// assert_eq!(id.to_string(), text);
/// assert!("3B6A".parse::<NodeId>().is_err());
/// # Ok::<(), bijou_net::transport::iroh::ParseNodeIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(PublicKey);

impl NodeId {
    /// The node id of these 32 bytes.
    ///
    /// # Errors
    ///
    /// [`ParseNodeIdError::NotAKey`] if they are not an Ed25519 point.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, ParseNodeIdError> {
        PublicKey::from_bytes(bytes)
            .map(Self)
            .map_err(|_| ParseNodeIdError::NotAKey)
    }

    /// The 32 key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// iroh's type for it.
    pub fn public_key(&self) -> PublicKey {
        self.0
    }
}

impl From<PublicKey> for NodeId {
    fn from(key: PublicKey) -> Self {
        Self(key)
    }
}

impl From<NodeId> for PublicKey {
    fn from(id: NodeId) -> Self {
        id.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex::write(f, self.as_bytes())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({self})")
    }
}

impl FromStr for NodeId {
    type Err = ParseNodeIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_bytes(&hex::parse::<32>(s)?)
    }
}

/// Why a string is not an iroh node id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseNodeIdError {
    /// Not 64 lower-case hex digits.
    #[error("an iroh node id is 64 lower-case hex digits (as `iroh_node_id=` in subduction_cli's --ready-file): {0}")]
    Hex(#[from] ParseHexError),
    /// 32 bytes that are not an Ed25519 public key.
    #[error("an iroh node id is an Ed25519 public key, and these 32 bytes are not one")]
    NotAKey,
}

/// Where to reach an iroh node directly: its [`NodeId`] and one or more
/// UDP socket addresses, written `<node-id>@<ip:port>[,<ip:port>...]`
/// (IPv6 as `[::1]:port`).
///
/// ```
/// use bijou_net::transport::iroh::{NodeAddr, ParseNodeAddrError};
///
/// let id = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";
/// let addr: NodeAddr = format!("{id}@127.0.0.1:4433,[::1]:4433").parse()?;
/// assert_eq!(addr.addrs.len(), 2);
/// assert_eq!(addr.to_string(), format!("{id}@127.0.0.1:4433,[::1]:4433"));
///
/// let err = id.parse::<NodeAddr>().unwrap_err();
/// assert!(matches!(err, ParseNodeAddrError::MissingAt));
/// assert!(err.to_string().contains("<node-id>@<ip:port>"));
/// # Ok::<(), ParseNodeAddrError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAddr {
    /// The node's id.
    pub id: NodeId,
    /// Its direct UDP addresses.
    pub addrs: Vec<SocketAddr>,
}

impl NodeAddr {
    /// The id and direct addresses.
    pub fn new(id: NodeId, addrs: impl IntoIterator<Item = SocketAddr>) -> Self {
        Self {
            id,
            addrs: addrs.into_iter().collect(),
        }
    }

    /// The direct address of one of our endpoints: its node id and the
    /// addresses its sockets are bound to (an endpoint bound to
    /// `127.0.0.1:0` gives `127.0.0.1:<port>`). An unspecified address
    /// (`0.0.0.0`, `[::]`) is given as the loopback of its family, so the
    /// result dials this endpoint from the same machine.
    pub fn of(endpoint: &Endpoint) -> Self {
        let addrs = endpoint.bound_sockets().into_iter().map(|mut addr| {
            if addr.ip().is_unspecified() {
                addr.set_ip(match addr {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            addr
        });
        Self::new(endpoint.id().into(), addrs)
    }
}

impl From<&NodeAddr> for EndpointAddr {
    fn from(addr: &NodeAddr) -> Self {
        addr.addrs
            .iter()
            .fold(EndpointAddr::new(addr.id.0), |a, ip| a.with_ip_addr(*ip))
    }
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@", self.id)?;
        for (i, addr) in self.addrs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{addr}")?;
        }
        Ok(())
    }
}

impl FromStr for NodeAddr {
    type Err = ParseNodeAddrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (id, addrs) = s.split_once('@').ok_or(ParseNodeAddrError::MissingAt)?;
        let id = id.parse().map_err(ParseNodeAddrError::NodeId)?;
        if addrs.is_empty() {
            return Err(ParseNodeAddrError::NoAddr);
        }
        let addrs = addrs
            .split(',')
            .enumerate()
            .map(|(index, text)| {
                text.parse().map_err(|source| ParseNodeAddrError::Addr {
                    index,
                    text: text.into(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { id, addrs })
    }
}

/// Why a string is not `<node-id>@<ip:port>[,<ip:port>...]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseNodeAddrError {
    /// No `@` between the node id and the addresses.
    #[error("expected <node-id>@<ip:port> (the node id as 64 hex digits, as `iroh_node_id=` in subduction_cli's --ready-file, then `@` and its UDP address), found no `@`")]
    MissingAt,
    /// The part before `@` is not a node id.
    #[error("in <node-id>@<ip:port>, the node id: {0}")]
    NodeId(#[source] ParseNodeIdError),
    /// Nothing after `@`.
    #[error("expected <node-id>@<ip:port>, found no address after `@` (relays and discovery are not used: give the node's direct UDP address)")]
    NoAddr,
    /// An address after `@` is not `ip:port`.
    #[error("in <node-id>@<ip:port>, address {index} ({text:?}) is not an ip:port (IPv6 as [::1]:4433; host names are not resolved)")]
    Addr {
        /// Its position in the comma-separated list, from 0.
        index: usize,
        /// The text.
        text: Box<str>,
        /// Why it does not parse.
        #[source]
        source: std::net::AddrParseError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";

    #[test]
    fn node_ids_are_64_lower_case_hex_digits_of_a_key() {
        let id: NodeId = ID.parse().expect("a node id");
        assert_eq!(id.to_string(), ID);
        assert_eq!(format!("{id:?}"), format!("NodeId({ID})"));
        assert_eq!(
            ID[..62].parse::<NodeId>(),
            Err(ParseNodeIdError::Hex(ParseHexError::Length {
                expected: 64,
                found: 62
            }))
        );
        // One text form, as subduction_cli writes it: lower case.
        assert_eq!(
            ID.to_uppercase().parse::<NodeId>(),
            Err(ParseNodeIdError::Hex(ParseHexError::InvalidDigit {
                index: 1,
                found: 'B'
            }))
        );
        let err = "zz".parse::<NodeId>().expect_err("not hex");
        assert!(err.to_string().contains("iroh_node_id="), "{err}");
    }

    #[test]
    fn a_node_address_says_what_was_expected() {
        // The text, the error it must give, and words its message must hold.
        type Case = (String, fn(&ParseNodeAddrError) -> bool, &'static str);
        let cases: [Case; 5] = [
            (
                ID.into(),
                |e| matches!(e, ParseNodeAddrError::MissingAt),
                "<node-id>@<ip:port>",
            ),
            (
                format!("{ID}@"),
                |e| matches!(e, ParseNodeAddrError::NoAddr),
                "direct UDP address",
            ),
            (
                "abc@127.0.0.1:1".into(),
                |e| matches!(e, ParseNodeAddrError::NodeId(ParseNodeIdError::Hex(_))),
                "64 lower-case hex digits",
            ),
            (
                format!("{ID}@127.0.0.1:1,localhost:4433"),
                |e| matches!(e, ParseNodeAddrError::Addr { index: 1, .. }),
                "\"localhost:4433\"",
            ),
            (
                format!("{ID}@::1:4433"),
                |e| matches!(e, ParseNodeAddrError::Addr { index: 0, .. }),
                "[::1]:4433",
            ),
        ];
        for (text, is, says) in cases {
            let err = text.parse::<NodeAddr>().expect_err(&text);
            assert!(is(&err), "{text}: {err:?}");
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
        let addr: NodeAddr = format!("{ID}@[::1]:4433").parse().expect("IPv6");
        assert_eq!(addr.addrs, vec!["[::1]:4433".parse().expect("addr")]);
        assert_eq!(addr.to_string(), format!("{ID}@[::1]:4433"));
    }
}
