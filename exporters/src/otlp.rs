//! Observer-named metrics as an OTLP `ExportMetricsServiceRequest` (protobuf), the
//! body of an OTLP/HTTP push to `/v1/metrics`.
//!
//! The messages below are our own `prost` structs carrying the field numbers and types
//! of OpenTelemetry's official `.proto` files (`opentelemetry/proto/collector/metrics/v1`,
//! `metrics/v1`, `common/v1`, `resource/v1`), only the fields we write. We encode
//! rather than use the `opentelemetry` SDK with `opentelemetry-otlp` because our values
//! are already measured and aggregated per period by the publishers (the SDK's
//! instruments would aggregate them again, through callbacks), and for the build: in a
//! scratch crate that already had hyper (client), tokio and prost built,
//! `opentelemetry-otlp` 0.33 with only `http-proto`, `metrics` and `hyper-client` (its
//! default client is reqwest) added 78 s to a 2-core debug build (the SDK, h2, tracing,
//! rand, and tokio and hyper again with more features), where this module adds no
//! crate (the push, `metrics_server::push`, adds hyper's client half: `want`,
//! `try-lock`). The tests decode what we write with `opentelemetry-proto`, the bindings
//! generated from the official files (a test-only dependency: 17 s in the same scratch
//! build).
//!
//! Layout of one request: one `ResourceMetrics` whose resource has `service.name`
//! (`neuronprof`), `service.version`, and, when the document has them, `host.name`
//! (`instance_info.instance_name`), `host.id` (`instance_id`) and `host.type`
//! (`instance_type`); one `ScopeMetrics` (scope `neuronprof`); one `Metric` per
//! [`observer_series`] series, a `Gauge` of double points stamped with the document's
//! time, each point's attributes its labels.
//!
//! ```
//! use analysis::live::{fixtures, parse_document};
//!
//! let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
//! let body = exporters::otlp::export_request(&doc, 1_700_000_000_000_000_000);
//! assert!(!body.is_empty());
//! ```

use analysis::live::MonitorDocument;
use prost::Message;

use crate::observer::{observer_series, SeriesKind};

/// `opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest`.
#[derive(Clone, PartialEq, Message)]
struct ExportMetricsServiceRequest {
    #[prost(message, repeated, tag = "1")]
    resource_metrics: Vec<ResourceMetrics>,
}

/// `opentelemetry.proto.metrics.v1.ResourceMetrics`.
#[derive(Clone, PartialEq, Message)]
struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    scope_metrics: Vec<ScopeMetrics>,
}

/// `opentelemetry.proto.resource.v1.Resource`.
#[derive(Clone, PartialEq, Message)]
struct Resource {
    #[prost(message, repeated, tag = "1")]
    attributes: Vec<KeyValue>,
}

/// `opentelemetry.proto.metrics.v1.ScopeMetrics`.
#[derive(Clone, PartialEq, Message)]
struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    metrics: Vec<Metric>,
}

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
#[derive(Clone, PartialEq, Message)]
struct InstrumentationScope {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    version: String,
}

/// `opentelemetry.proto.metrics.v1.Metric`, with the `gauge` member of `data` only.
#[derive(Clone, PartialEq, Message)]
struct Metric {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    description: String,
    #[prost(string, tag = "3")]
    unit: String,
    #[prost(message, optional, tag = "5")]
    gauge: Option<Gauge>,
}

/// `opentelemetry.proto.metrics.v1.Gauge`.
#[derive(Clone, PartialEq, Message)]
struct Gauge {
    #[prost(message, repeated, tag = "1")]
    data_points: Vec<NumberDataPoint>,
}

/// `opentelemetry.proto.metrics.v1.NumberDataPoint`, a double value.
#[derive(Clone, PartialEq, Message)]
struct NumberDataPoint {
    #[prost(message, repeated, tag = "7")]
    attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "3")]
    time_unix_nano: u64,
    #[prost(double, optional, tag = "4")]
    as_double: Option<f64>,
}

/// `opentelemetry.proto.common.v1.KeyValue`.
#[derive(Clone, PartialEq, Message)]
struct KeyValue {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(message, optional, tag = "2")]
    value: Option<AnyValue>,
}

/// `opentelemetry.proto.common.v1.AnyValue`, the `string_value` member only.
#[derive(Clone, PartialEq, Message)]
struct AnyValue {
    #[prost(string, optional, tag = "1")]
    string_value: Option<String>,
}

fn key_value(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            string_value: Some(value.to_owned()),
        }),
    }
}

/// The resource attributes a request carries for `doc` (name, value).
pub fn resource_attributes(doc: &MonitorDocument) -> Vec<(&'static str, String)> {
    let mut attributes = vec![
        ("service.name", "neuronprof".to_owned()),
        ("service.version", env!("CARGO_PKG_VERSION").to_owned()),
    ];
    if let Some(i) = &doc.instance_info {
        for (key, value) in [
            ("host.name", &i.instance_name),
            ("host.id", &i.instance_id),
            ("host.type", &i.instance_type),
        ] {
            if !value.is_empty() {
                attributes.push((key, value.clone()));
            }
        }
    }
    attributes
}

/// `doc`'s Observer-named series as an encoded `ExportMetricsServiceRequest`, every
/// point stamped `time_unix_nano`.
pub fn export_request(doc: &MonitorDocument, time_unix_nano: u64) -> Vec<u8> {
    let metrics = observer_series(doc)
        .into_iter()
        .map(|series| {
            let data_points = series
                .points
                .iter()
                .map(|p| NumberDataPoint {
                    attributes: p.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
                    time_unix_nano,
                    as_double: Some(p.value),
                })
                .collect();
            match series.kind {
                SeriesKind::Gauge => Metric {
                    name: series.name.to_owned(),
                    description: series.description.to_owned(),
                    unit: series.unit.to_owned(),
                    gauge: Some(Gauge { data_points }),
                },
            }
        })
        .collect();
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource_attributes(doc)
                    .iter()
                    .map(|(k, v)| key_value(k, v))
                    .collect(),
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "neuronprof".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                }),
                metrics,
            }],
        }],
    };
    request.encode_to_vec()
}
