//! Subduction's long-poll client (`subduction_http_longpoll`, an oracle)
//! over a plain hyper HTTP/1.1 client: [`HyperPost`] implements their
//! `HttpClient` trait, one TCP connection per request, `http://` only.

use std::time::Duration;

use future_form::Sendable;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use subduction_http_longpoll::http_client::{HttpClient, HttpResponse};
use tokio::net::TcpStream;

/// Why a [`HyperPost`] request failed.
#[derive(Debug)]
pub struct PostError(String);

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PostError {}

fn fail(what: &str, e: impl std::fmt::Display) -> PostError {
    PostError(format!("{what}: {e}"))
}

/// Their `HttpClient` over hyper: `POST url` with `headers` and `body`, the
/// whole response read (bounded by `timeout`, which must exceed the
/// server's poll hold).
#[derive(Debug, Clone)]
pub struct HyperPost {
    /// Bound on one request, response included.
    pub timeout: Duration,
}

impl Default for HyperPost {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
        }
    }
}

impl HyperPost {
    async fn post_once(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<HttpResponse, PostError> {
        let uri: hyper::Uri = url.parse().map_err(|e| fail("bad URL", e))?;
        let host = uri
            .host()
            .ok_or_else(|| PostError(format!("no host in {url}")))?;
        let port = uri.port_u16().unwrap_or(80);
        let tcp = TcpStream::connect((host, port))
            .await
            .map_err(|e| fail("connect", e))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| fail("HTTP handshake", e))?;
        tokio::spawn(conn);
        let mut request = hyper::Request::post(uri.path()).header("host", format!("{host}:{port}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| fail("request", e))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| fail("request", e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| fail("response body", e))?
            .to_bytes()
            .to_vec();
        Ok(HttpResponse {
            status,
            body,
            headers,
        })
    }
}

impl HttpClient<Sendable> for HyperPost {
    type Error = PostError;

    fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> <Sendable as future_form::FutureForm>::Future<'_, Result<HttpResponse, PostError>> {
        let url = url.to_owned();
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Box::pin(async move {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            tokio::time::timeout(self.timeout, self.post_once(&url, &headers, body))
                .await
                .map_err(|_| PostError(format!("no answer within {:?}", self.timeout)))?
        })
    }
}
