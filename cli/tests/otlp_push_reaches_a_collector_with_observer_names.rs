//! `neuronprof monitor --otlp-endpoint URL`: each document is posted as OTLP over
//! HTTP/protobuf. A small collector on loopback (a thread of this test) receives the
//! request, which is decoded with `opentelemetry-proto` (OpenTelemetry's official
//! .proto files, compiled) and checked: path and content type, resource attributes,
//! metric names, units and values against the document's own figures.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use analysis::live::{fixtures, parse_document};
use neuronprof::monitor::OtlpFeed;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use prost::Message as _;

/// What the collector saw of one request.
struct Received {
    request_line: String,
    content_type: String,
    body: Vec<u8>,
}

/// A one-request collector answering `status`; its address and what it received.
fn collector(status: &'static str) -> (std::net::SocketAddr, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reader = BufReader::new(stream);
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let (mut length, mut content_type) = (0usize, String::new());
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "content-type" => content_type = value.trim().to_owned(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope"
        )
        .unwrap();
        tx.send(Received {
            request_line: request_line.trim_end().to_owned(),
            content_type,
            body,
        })
        .unwrap();
    });
    (addr, rx)
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    match kv.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        other => panic!("{key}: not a string: {other:?}"),
    }
}

#[test]
fn a_document_reaches_the_collector_under_observer_names() {
    let (addr, received) = collector("200 OK");
    let mut feed = OtlpFeed::new(&format!("http://{addr}/v1/metrics")).unwrap();
    feed.update(fixtures::AWS_TRN2).unwrap();
    let got = received.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(got.request_line, "POST /v1/metrics HTTP/1.1");
    assert_eq!(got.content_type, "application/x-protobuf");

    let request = ExportMetricsServiceRequest::decode(&got.body[..]).unwrap();
    assert_eq!(request.resource_metrics.len(), 1);
    let resource_metrics = &request.resource_metrics[0];
    let resource = resource_metrics.resource.as_ref().unwrap();
    let doc = parse_document(fixtures::AWS_TRN2).unwrap();
    let instance = doc.instance_info.as_ref().unwrap();
    assert_eq!(
        text(&resource.attributes, "service.name").as_deref(),
        Some("neuronprof")
    );
    assert_eq!(
        text(&resource.attributes, "host.type"),
        Some(instance.instance_type.clone())
    );
    assert_eq!(
        text(&resource.attributes, "host.id"),
        Some(instance.instance_id.clone())
    );
    // The fixture has no instance name: no empty host.name.
    assert_eq!(text(&resource.attributes, "host.name"), None);

    let metrics = &resource_metrics.scope_metrics[0].metrics;
    let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "neuron.core.utilization",
            "neuron.core.utilization.sum",
            "neuron.core.utilization.avg",
            "neuron.core.utilization.max"
        ]
    );
    // The document's per-core figures, in percent.
    let mut per_core = Vec::new();
    for entry in &doc.neuron_runtime_data {
        let counters = entry.report.neuroncore_counters.as_ref().unwrap();
        for (core, c) in &counters.neuroncores_in_use {
            per_core.push((core.to_string(), c.neuroncore_utilization));
        }
    }
    let sum: f64 = per_core.iter().map(|c| c.1).sum();
    let max = per_core.iter().map(|c| c.1).fold(f64::MIN, f64::max);
    for m in metrics {
        assert_eq!(m.unit, "%", "{}", m.name);
        let Some(metric::Data::Gauge(gauge)) = &m.data else {
            panic!("{}: not a gauge: {:?}", m.name, m.data);
        };
        let values: Vec<(Option<String>, f64)> = gauge
            .data_points
            .iter()
            .map(|p| {
                assert!(p.time_unix_nano > 1_600_000_000_000_000_000, "{p:?}");
                let Some(number_data_point::Value::AsDouble(v)) = p.value else {
                    panic!("{}: not a double: {p:?}", m.name);
                };
                (text(&p.attributes, "neuroncore"), v)
            })
            .collect();
        let expected: Vec<(Option<String>, f64)> = match m.name.as_str() {
            "neuron.core.utilization" => per_core
                .iter()
                .map(|(core, v)| (Some(core.clone()), *v))
                .collect(),
            "neuron.core.utilization.sum" => vec![(None, sum)],
            "neuron.core.utilization.avg" => vec![(None, sum / per_core.len() as f64)],
            "neuron.core.utilization.max" => vec![(None, max)],
            other => panic!("unexpected {other}"),
        };
        assert_eq!(values, expected, "{}", m.name);
    }
}

#[test]
fn a_collector_that_refuses_is_an_error_naming_its_answer() {
    let (addr, received) = collector("500 Internal Server Error");
    let mut feed = OtlpFeed::new(&format!("http://{addr}/v1/metrics")).unwrap();
    let err = feed.update(fixtures::NEURONPROF_TWO_RANKS).unwrap_err();
    received.recv_timeout(Duration::from_secs(10)).unwrap();
    let message = format!("{err:#}");
    assert!(
        message.contains("500") && message.contains("nope"),
        "{message}"
    );
    assert!(OtlpFeed::new("https://collector:4318/v1/metrics").is_err());
}
