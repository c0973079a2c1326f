//! The server's base URL, `http://host[:port][/base]`, and the four
//! endpoints under it.

use hyper::header::HeaderValue;
use hyper::Uri;

use super::super::{path, LongPollError};

/// One of the four endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    Handshake,
    Send,
    Recv,
    Disconnect,
}

impl Endpoint {
    /// The endpoint's path under the base ([`path`]).
    pub(super) const fn path(self) -> &'static str {
        match self {
            Self::Handshake => path::HANDSHAKE,
            Self::Send => path::SEND,
            Self::Recv => path::RECV,
            Self::Disconnect => path::DISCONNECT,
        }
    }
}

/// Where the server is: the host and port to connect to, the `host`
/// header, and each endpoint's request target (`{base}/lp/...`).
#[derive(Debug, Clone)]
pub(super) struct BaseUrl {
    /// The host name or address, without an IPv6 address's brackets.
    pub(super) host: String,
    pub(super) port: u16,
    /// `host[:port]` as the URL wrote it.
    pub(super) host_header: HeaderValue,
    handshake: Uri,
    send: Uri,
    recv: Uri,
    disconnect: Uri,
}

impl BaseUrl {
    /// Parses `http://host[:port][/base]`; a trailing `/` is trimmed from
    /// the base, and the port is 80 when none is given.
    pub(super) fn parse(url: &str) -> Result<Self, LongPollError> {
        let refuse = |reason| LongPollError::Url {
            url: url.to_owned(),
            reason,
        };
        if url.contains(['?', '#']) {
            return Err(refuse("a base URL has no query or fragment"));
        }
        let uri: Uri = url
            .parse()
            .map_err(|_| refuse("not a URL (expected http://host:port[/base])"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => return Err(refuse(
                "TLS (https://) is not built in: put a TLS-terminating proxy in front and connect to it with http://, or use another transport",
            )),
            _ => return Err(refuse("only http:// URLs are supported (expected http://host:port[/base])")),
        }
        let authority = uri
            .authority()
            .ok_or_else(|| refuse("no host (expected http://host:port[/base])"))?;
        if authority.as_str().contains('@') {
            return Err(refuse("user info (user@host) is not supported"));
        }
        let host = authority.host().trim_matches(['[', ']']);
        if host.is_empty() {
            return Err(refuse("no host (expected http://host:port[/base])"));
        }
        let host_header = HeaderValue::from_str(authority.as_str())
            .map_err(|_| refuse("the host is not a valid header value"))?;
        let base = uri.path().trim_end_matches('/');
        let target = |endpoint: Endpoint| {
            format!("{base}{}", endpoint.path())
                .parse::<Uri>()
                .map_err(|_| refuse("the base path is not a valid request target"))
        };
        Ok(Self {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            host_header,
            handshake: target(Endpoint::Handshake)?,
            send: target(Endpoint::Send)?,
            recv: target(Endpoint::Recv)?,
            disconnect: target(Endpoint::Disconnect)?,
        })
    }

    /// The request target of `endpoint` (origin form: the path only).
    pub(super) fn target(&self, endpoint: Endpoint) -> &Uri {
        match endpoint {
            Endpoint::Handshake => &self.handshake,
            Endpoint::Send => &self.send,
            Endpoint::Recv => &self.recv,
            Endpoint::Disconnect => &self.disconnect,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(url: &str) -> &'static str {
        match BaseUrl::parse(url) {
            Err(LongPollError::Url { reason, .. }) => reason,
            other => panic!("{url}: expected a URL error, got {other:?}"),
        }
    }

    #[test]
    fn endpoints_sit_under_the_base_path_with_its_trailing_slash_trimmed() {
        let url = BaseUrl::parse("http://example.org:8080/sync/").expect("parses");
        assert_eq!((url.host.as_str(), url.port), ("example.org", 8080));
        assert_eq!(url.host_header, "example.org:8080");
        assert_eq!(url.target(Endpoint::Handshake), "/sync/lp/handshake");
        assert_eq!(url.target(Endpoint::Send), "/sync/lp/send");
        assert_eq!(url.target(Endpoint::Recv), "/sync/lp/recv");
        assert_eq!(url.target(Endpoint::Disconnect), "/sync/lp/disconnect");

        let url = BaseUrl::parse("http://127.0.0.1:7").expect("parses");
        assert_eq!(url.target(Endpoint::Recv), "/lp/recv");
        let url = BaseUrl::parse("http://[::1]:9000/").expect("parses");
        assert_eq!((url.host.as_str(), url.port), ("::1", 9000));
        assert_eq!(url.host_header, "[::1]:9000");
        assert_eq!(url.target(Endpoint::Send), "/lp/send");
        assert_eq!(BaseUrl::parse("http://localhost").expect("parses").port, 80);
    }

    #[test]
    fn tls_other_schemes_and_odd_urls_are_refused_with_a_reason() {
        assert!(reason("https://example.org/").contains("TLS"));
        assert!(reason("ws://example.org/").contains("only http://"));
        assert!(reason("example.org:80").contains("only http://"));
        assert!(reason("http://example.org/?a=b").contains("query"));
        assert!(reason("http://user@example.org/").contains("user info"));
        assert!(reason("not a url at all").contains("not a URL"));
    }
}
