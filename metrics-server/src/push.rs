//! Pushes metrics to an OpenTelemetry collector: OTLP over HTTP/protobuf, one `POST` of
//! an encoded `ExportMetricsServiceRequest` to `{endpoint}/v1/metrics` per call.
//!
//! The endpoint is chosen as OpenTelemetry's exporter specification says: a base URL
//! (`--otlp-endpoint`, or `OTEL_EXPORTER_OTLP_ENDPOINT`) gets `v1/metrics` appended;
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is used as it is. Only `http://` URLs: the
//! collector is expected beside the monitor on the node (as Neuron Observer's own
//! Helm chart places one), and a TLS client would add a second TLS stack to the
//! workspace; an `https://` URL is refused with that reason.
//!
//! The client is hyper's HTTP/1 connection on a one-thread tokio runtime of its own,
//! with a deadline for the whole exchange ([`PUSH_DEADLINE`]). A push that fails
//! returns why; the caller decides whether to go on.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};

/// How long one push may take, connect to answer.
pub const PUSH_DEADLINE: Duration = Duration::from_secs(2);

/// The content type of an OTLP/HTTP protobuf body.
pub const OTLP_PROTOBUF: &str = "application/x-protobuf";

/// Why a push failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushError(pub String);

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PushError {}

/// An `http://host:port/path` URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// `host:port` (port 80 when the URL has none).
    pub authority: String,
    /// The path, `/` at least.
    pub path: String,
}

impl HttpUrl {
    /// Parses an `http://` URL; anything else is refused with the reason.
    pub fn parse(url: &str) -> Result<Self, PushError> {
        let url = url.trim();
        let Some(rest) = url.strip_prefix("http://") else {
            let reason = if url.starts_with("https://") {
                "https is not supported: point it at a collector over plain http \
                 (e.g. http://127.0.0.1:4318)"
            } else {
                "expected http://HOST:PORT"
            };
            return Err(PushError(format!("OTLP endpoint {url:?}: {reason}")));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(PushError(format!("OTLP endpoint {url:?}: no host")));
        }
        let has_port = match authority.rfind(':') {
            Some(i) => !authority[i..].contains(']'),
            None => false,
        };
        let authority = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(HttpUrl {
            authority,
            path: path.to_owned(),
        })
    }
}

/// The metrics URL for a base endpoint (`v1/metrics` appended, one slash between).
pub fn metrics_url(base: &str) -> String {
    format!("{}/v1/metrics", base.trim().trim_end_matches('/'))
}

/// The metrics URL from `--otlp-endpoint`, else from the standard environment
/// variables (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` as is, `OTEL_EXPORTER_OTLP_ENDPOINT`
/// as a base); `None` when none is set.
pub fn endpoint_from(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(base) = flag {
        return Some(metrics_url(base));
    }
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        .map(|v| v.trim().to_owned())
        .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT").map(|v| metrics_url(&v)))
}

/// A client that posts OTLP bodies to one URL.
#[derive(Debug)]
pub struct OtlpPusher {
    url: HttpUrl,
    runtime: tokio::runtime::Runtime,
}

impl OtlpPusher {
    /// A pusher to `url` (the full metrics URL, e.g. from [`endpoint_from`]).
    pub fn new(url: &str) -> Result<Self, PushError> {
        let url = HttpUrl::parse(url)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| PushError(format!("cannot start the OTLP client's runtime: {e}")))?;
        Ok(OtlpPusher { url, runtime })
    }

    /// Posts one protobuf body; `Ok` once the collector answered 2xx.
    pub fn push(&self, body: Vec<u8>) -> Result<(), PushError> {
        let exchange = post(&self.url, body);
        match self
            .runtime
            .block_on(async { tokio::time::timeout(PUSH_DEADLINE, exchange).await })
        {
            Ok(result) => result,
            Err(_) => Err(PushError(format!(
                "OTLP push to http://{}{}: no answer within {:?}",
                self.url.authority, self.url.path, PUSH_DEADLINE
            ))),
        }
    }
}

async fn post(url: &HttpUrl, body: Vec<u8>) -> Result<(), PushError> {
    let at = format!("http://{}{}", url.authority, url.path);
    let fail = |what: &str, e: &dyn std::fmt::Display| PushError(format!("{at}: {what}: {e}"));
    let stream = tokio::net::TcpStream::connect(&url.authority)
        .await
        .map_err(|e| fail("cannot connect", &e))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| fail("handshake", &e))?;
    let driver = tokio::spawn(connection);
    let request = hyper::Request::post(url.path.as_str())
        .header(hyper::header::HOST, url.authority.as_str())
        .header(hyper::header::CONTENT_TYPE, OTLP_PROTOBUF)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| fail("request", &e))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| fail("sending", &e))?;
    let status = response.status();
    // Read the answer whole (an error's text says why), then let the connection go.
    let answer = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    driver.abort();
    if status.is_success() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&answer[..answer.len().min(200)]).into_owned();
        Err(PushError(format!(
            "{at}: the collector answered {status}: {text}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_and_https_is_refused() {
        let url = HttpUrl::parse("http://127.0.0.1:4318/v1/metrics").unwrap();
        assert_eq!(url.authority, "127.0.0.1:4318");
        assert_eq!(url.path, "/v1/metrics");
        assert_eq!(
            HttpUrl::parse("http://collector").unwrap().authority,
            "collector:80"
        );
        assert_eq!(
            HttpUrl::parse("http://[::1]:4318/x").unwrap().authority,
            "[::1]:4318"
        );
        assert!(HttpUrl::parse("https://c:4318")
            .unwrap_err()
            .0
            .contains("https is not supported"));
    }

    #[test]
    fn the_endpoint_comes_from_the_flag_then_the_environment() {
        let none = |_: &str| None;
        assert_eq!(endpoint_from(None, none), None);
        assert_eq!(
            endpoint_from(Some("http://c:4318/"), none).unwrap(),
            "http://c:4318/v1/metrics"
        );
        let base = |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://b:4318".into());
        assert_eq!(
            endpoint_from(None, base).unwrap(),
            "http://b:4318/v1/metrics"
        );
        let both = |k: &str| match k {
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT" => Some("http://m:9/custom".into()),
            _ => Some("http://b:4318".into()),
        };
        assert_eq!(endpoint_from(None, both).unwrap(), "http://m:9/custom");
        assert_eq!(
            endpoint_from(Some("http://f:1"), both).unwrap(),
            "http://f:1/v1/metrics"
        );
    }
}
