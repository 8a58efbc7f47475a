//! `neuronprof monitor --prometheus` serves Neuron Observer's names for what it has
//! (`exporters::observer`) beside neuron-monitor's: documents fed to the metrics server
//! as the command feeds them, scraped over loopback HTTP, and each Observer-named
//! sample checked against the neuron-monitor-named samples of the same scrape.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use metrics_server::{Exposition, MetricsServer};
use neuronprof::monitor::PrometheusFeed;

fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// `(name, labels, value)` of every sample line.
fn samples(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (head, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = head.split_once('{').unwrap_or((head, "}"));
            let labels = labels
                .strip_suffix('}')
                .unwrap()
                .split("\",")
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once("=\"").unwrap();
                    (k.to_owned(), v.trim_end_matches('"').to_owned())
                })
                .collect();
            (name.to_owned(), labels, value.parse().unwrap())
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

fn check(document: &str) {
    let exposition = Exposition::default();
    let server = MetricsServer::bind("127.0.0.1:0", exposition.clone()).unwrap();
    let mut feed = PrometheusFeed::new(exposition);
    feed.update(document).unwrap();
    let text = scrape(server.local_addr());
    let all = samples(&text);

    // neuron-monitor's names, as before.
    let ratios: Vec<_> = all
        .iter()
        .filter(|(n, _, _)| n == "neuroncore_utilization_ratio")
        .collect();
    assert!(!ratios.is_empty(), "{text}");

    // Per core: Observer's native series carries the same figure, in percent, with
    // the same runtime, core and instance labels.
    let native: Vec<_> = all
        .iter()
        .filter(|(n, _, _)| n == "neuron_core_utilization_percent")
        .collect();
    assert_eq!(native.len(), ratios.len(), "{text}");
    for (_, labels, ratio) in &ratios {
        let (_, _, percent) = native
            .iter()
            .find(|(_, l, _)| l == labels)
            .unwrap_or_else(|| panic!("no neuron_core_utilization_percent{labels:?}\n{text}"));
        assert!(close(*percent, ratio * 100.0), "{percent} vs {ratio}");
    }
    assert!(text.contains("# TYPE neuron_core_utilization_percent gauge"));

    // Over the node: sum, mean and maximum of the same per-core figures.
    let percents: Vec<f64> = ratios.iter().map(|(_, _, r)| r * 100.0).collect();
    let sum: f64 = percents.iter().sum();
    let expected = [
        ("neuron_core_utilization_sum_percent", sum),
        (
            "neuron_core_utilization_avg_percent",
            sum / percents.len() as f64,
        ),
        (
            "neuron_core_utilization_max_percent",
            percents.iter().copied().fold(f64::MIN, f64::max),
        ),
    ];
    for (name, value) in expected {
        let found: Vec<_> = all.iter().filter(|(n, _, _)| n == name).collect();
        assert_eq!(found.len(), 1, "{name}\n{text}");
        assert!(
            close(found[0].2, value),
            "{name}: {} vs {value}",
            found[0].2
        );
        assert!(text.contains(&format!("# TYPE {name} gauge")), "{name}");
    }
}

#[test]
fn observer_names_carry_neuron_monitors_values_for_a_neuronprof_document() {
    check(analysis::live::fixtures::NEURONPROF_TWO_RANKS);
}

#[test]
fn observer_names_carry_neuron_monitors_values_for_an_aws_document() {
    check(analysis::live::fixtures::AWS_TRN2);
}
