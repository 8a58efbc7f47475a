//! Where the server may listen, and who can read what it serves there.
//!
//! The metrics name the host, the pids, the workloads and the operators of every
//! process on it (what the endpoint sockets keep to their owner): they are served on
//! a loopback address unless the user says otherwise, either by naming a
//! non-loopback address (an IP literal: `10.0.0.5:9464`, `0.0.0.0:9464`) or by
//! passing [`Exposure::Public`] (`--listen-public`), which also lets a host name that
//! resolves off the loopback through and makes a bare port listen on every
//! interface. [`audience`] says who can read it, for the warning the caller prints.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use crate::BindError;

/// Whether the user allowed addresses off the loopback (`--listen-public`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exposure {
    /// Loopback addresses, and non-loopback ones named as IP literals.
    #[default]
    Loopback,
    /// Any address, including host names that resolve off the loopback.
    Public,
}

/// The addresses to listen on for `addr`: `IP:PORT`, `[IPv6]:PORT`, `NAME:PORT` or a
/// bare `PORT` (127.0.0.1, or 0.0.0.0 with [`Exposure::Public`]).
pub fn resolve(addr: &str, exposure: Exposure) -> Result<Vec<SocketAddr>, BindError> {
    let error = |reason: String| BindError {
        addr: addr.to_owned(),
        reason,
    };
    let text = addr.trim();
    if let Ok(port) = text.parse::<u16>() {
        let ip = match exposure {
            Exposure::Loopback => Ipv4Addr::LOCALHOST,
            Exposure::Public => Ipv4Addr::UNSPECIFIED,
        };
        return Ok(vec![SocketAddr::from((ip, port))]);
    }
    if let Ok(literal) = text.parse::<SocketAddr>() {
        // Named explicitly: the caller warns who can read it (`audience`).
        return Ok(vec![literal]);
    }
    let resolved: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| error(e.to_string()))?
        .collect();
    admit(addr, resolved, exposure)
}

/// The addresses a host name resolved to, if `exposure` allows them all.
fn admit(
    addr: &str,
    resolved: Vec<SocketAddr>,
    exposure: Exposure,
) -> Result<Vec<SocketAddr>, BindError> {
    let error = |reason: String| BindError {
        addr: addr.to_owned(),
        reason,
    };
    if resolved.is_empty() {
        return Err(error("the name resolves to no address".to_owned()));
    }
    if exposure == Exposure::Loopback {
        if let Some(open) = resolved.iter().find(|a| !a.ip().is_loopback()) {
            return Err(error(format!(
                "it resolves to {}, which is not a loopback address: the metrics (host \
                 name, pids, workload and operator names) would be readable from the \
                 network. Name the address itself ({open}) or pass --listen-public to \
                 serve them there, or use 127.0.0.1:{}",
                open.ip(),
                open.port()
            )));
        }
    }
    Ok(resolved)
}

/// Who can read what is served on `addr`, as a sentence.
pub fn audience(addr: &SocketAddr) -> String {
    let port = addr.port();
    match addr.ip() {
        ip if ip.is_loopback() => format!(
            "every user and process of this host can read them (loopback {ip}, port {port})"
        ),
        ip if ip.is_unspecified() => format!(
            "anyone who can reach this host on TCP port {port}, on any of its network \
             interfaces, can read them (host name, pids, workload and operator names)"
        ),
        ip => format!(
            "anyone who can reach {} on TCP port {port} can read them (host name, pids, \
             workload and operator names)",
            display_ip(ip)
        ),
    }
}

/// Whether serving on `addr` reaches beyond this host.
pub fn is_public(addr: &SocketAddr) -> bool {
    !addr.ip().is_loopback()
}

fn display_ip(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback_unless_public() {
        assert_eq!(
            resolve("9464", Exposure::Loopback).unwrap(),
            ["127.0.0.1:9464".parse().unwrap()]
        );
        assert_eq!(
            resolve("9464", Exposure::Public).unwrap(),
            ["0.0.0.0:9464".parse().unwrap()]
        );
    }

    #[test]
    fn ip_literals_are_taken_as_named_and_their_audience_is_said() {
        for (addr, says) in [
            ("127.0.0.1:9464", "every user and process of this host"),
            ("[::1]:9464", "every user and process of this host"),
            ("0.0.0.0:9464", "any of its network interfaces"),
            ("[::]:9464", "any of its network interfaces"),
            (
                "10.1.2.3:9464",
                "anyone who can reach 10.1.2.3 on TCP port 9464",
            ),
        ] {
            let resolved = resolve(addr, Exposure::Loopback).unwrap();
            assert_eq!(resolved, [addr.parse().unwrap()]);
            let audience = audience(&resolved[0]);
            assert!(audience.contains(says), "{addr}: {audience}");
            assert_eq!(
                is_public(&resolved[0]),
                !addr.contains("::1") && !addr.starts_with("127.")
            );
        }
    }

    #[test]
    fn a_name_is_served_only_if_it_resolves_to_loopback_or_public_is_allowed() {
        let local = resolve("localhost:9464", Exposure::Loopback).unwrap();
        assert!(local.iter().all(|a| a.ip().is_loopback()), "{local:?}");
        let err = resolve("no such host name.invalid:9464", Exposure::Loopback).unwrap_err();
        assert!(
            err.to_string().contains("no such host name.invalid"),
            "{err}"
        );
        let err = resolve("9464x", Exposure::Loopback).unwrap_err();
        assert!(err.to_string().contains("9464x"), "{err}");
        // A name that resolves off the loopback (as `myhost:9464` does on most hosts).
        let lan: Vec<SocketAddr> = vec![
            "127.0.1.1:9464".parse().unwrap(),
            "10.0.0.5:9464".parse().unwrap(),
        ];
        let err = admit("myhost:9464", lan.clone(), Exposure::Loopback).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("myhost:9464")
                && text.contains("resolves to 10.0.0.5")
                && text.contains("--listen-public"),
            "{text}"
        );
        assert_eq!(
            admit("myhost:9464", lan.clone(), Exposure::Public).unwrap(),
            lan
        );
    }
}
