//! What the server answers: the latest text at `/metrics` with Prometheus' content type
//! (GET and HEAD), 404 elsewhere, 405 for other methods.

mod common;

use common::request;
use metrics_server::{Exposition, MetricsServer};

const TEXT: &str = "# HELP up Whether it is up.\n# TYPE up gauge\nup{pid=\"1\"} 1\n";

fn server() -> (Exposition, MetricsServer) {
    let exposition = Exposition::default();
    exposition.set(TEXT.to_owned());
    let server = MetricsServer::bind("127.0.0.1:0", exposition.clone()).expect("binds");
    (exposition, server)
}

#[test]
fn get_answers_the_latest_text_with_the_exposition_content_type() {
    let (exposition, server) = server();
    let answer = request(server.local_addr(), "GET", "/metrics");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.body, TEXT);
    let content_type = answer.header("content-type").expect("a content type");
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    assert_eq!(
        answer.header("content-length"),
        Some(&*TEXT.len().to_string())
    );

    // A query string is still the metrics; a new text is served at once.
    exposition.set("up 0\n".to_owned());
    let answer = request(server.local_addr(), "GET", "/metrics?name[]=up");
    assert_eq!((answer.status, answer.body.as_str()), (200, "up 0\n"));
}

#[test]
fn a_large_text_is_sent_whole_with_its_length() {
    // A fleet's exposition passes 32 KiB (tiny_http's default threshold for chunked
    // transfer encoding); it is still one body with a Content-Length, which the simplest
    // scraper (and this test's client) reads as is.
    let (exposition, server) = server();
    let text: String = (0..4000)
        .map(|i| format!("neuronprof_sample{{rank=\"{i}\"}} {i}\n"))
        .collect();
    assert!(text.len() > 64 * 1024);
    exposition.set(text.clone());
    let answer = request(server.local_addr(), "GET", "/metrics");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("transfer-encoding"), None);
    assert_eq!(
        answer.header("content-length"),
        Some(&*text.len().to_string())
    );
    assert!(answer.body == text, "the body is the text, unframed");
}

#[test]
fn head_answers_the_headers_without_the_body() {
    let (_exposition, server) = server();
    let answer = request(server.local_addr(), "HEAD", "/metrics");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.is_empty(), "{answer:?}");
    assert!(answer
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")));
    assert_eq!(
        answer.header("content-length"),
        Some(&*TEXT.len().to_string())
    );
}

#[test]
fn other_paths_are_not_found_and_other_methods_not_allowed() {
    let (_exposition, server) = server();
    for path in ["/", "/metricsx", "/metrics/", "/favicon.ico"] {
        let answer = request(server.local_addr(), "GET", path);
        assert_eq!(answer.status, 404, "{path}: {answer:?}");
        assert!(answer.body.contains("/metrics"), "{path}: {answer:?}");
        assert!(!answer.body.contains("up{"), "{path}: {answer:?}");
    }
    let answer = request(server.local_addr(), "POST", "/metrics");
    assert_eq!(answer.status, 405, "{answer:?}");
    assert_eq!(answer.header("allow"), Some("GET, HEAD"));
}

#[test]
fn an_address_that_does_not_resolve_names_itself_in_the_error() {
    let error = MetricsServer::bind("not an address", Exposition::default()).unwrap_err();
    assert!(error.to_string().contains("not an address"), "{error}");
    let (_exposition, server) = server();
    let taken = server.local_addr().to_string();
    let error = MetricsServer::bind(&taken, Exposition::default()).unwrap_err();
    assert!(error.to_string().contains(&taken), "{error}");
}

#[test]
fn dropping_the_server_stops_it() {
    let (_exposition, server) = server();
    let addr = server.local_addr();
    drop(server);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still listening on {addr}"
    );
}
