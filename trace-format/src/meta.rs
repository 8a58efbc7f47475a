//! Top-level metadata: every key of the trace object other than `traceEvents`.

use serde::Deserialize;

use crate::json::RawJson;

/// Where a metadata key sits relative to `traceEvents`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Before `traceEvents` (Kineto puts everything but `traceName` here).
    BeforeEvents,
    /// After `traceEvents` (`traceName`, log arrays such as `INFO`, sometimes
    /// `baseTimeNanoseconds` in traces from 2024).
    AfterEvents,
}

/// One top-level key with its raw JSON value.
#[derive(Clone, Debug, PartialEq)]
pub struct MetaEntry {
    /// The key, unescaped.
    pub key: String,
    /// The value, verbatim.
    pub value: RawJson<'static>,
    /// Whether it came before or after `traceEvents`.
    pub placement: Placement,
}

/// The top-level metadata of a trace, every key kept in input order with its raw JSON.
///
/// Typed accessors decode the well-known keys on demand: [`TraceMeta::base_time_ns`],
/// [`TraceMeta::distributed_info`], [`TraceMeta::device_properties`] and so on.
/// Unknown keys (`trace_id`, `host_name`, `INFO`, a dropped-record count…) stay available
/// through [`TraceMeta::get`] and [`TraceMeta::unknown_entries`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceMeta {
    entries: Vec<MetaEntry>,
}

/// Keys this crate gives typed access to (and the writer places itself).
pub(crate) const KNOWN_KEYS: &[&str] = &[
    "schemaVersion",
    "deviceProperties",
    "distributedInfo",
    "displayTimeUnit",
    "baseTimeNanoseconds",
    "traceName",
];

impl TraceMeta {
    /// Empty metadata (no keys at all).
    pub fn new() -> Self {
        TraceMeta::default()
    }

    /// What Kineto writes for a new trace: `schemaVersion: 1`, `deviceProperties: []`,
    /// `displayTimeUnit: "ms"`, and `baseTimeNanoseconds` when given.
    pub fn kineto(base_time_ns: Option<i64>) -> Self {
        let mut meta = TraceMeta::new();
        meta.set_raw("schemaVersion", RawJson::trusted("1"));
        meta.set_raw("deviceProperties", RawJson::trusted("[]"));
        meta.set_raw("displayTimeUnit", RawJson::trusted("\"ms\""));
        if let Some(base) = base_time_ns {
            meta.set_base_time_ns(base);
        }
        meta
    }

    /// All entries, in input order.
    pub fn entries(&self) -> &[MetaEntry] {
        &self.entries
    }

    /// The raw value of `key` (the last one if repeated).
    pub fn get(&self, key: &str) -> Option<&RawJson<'static>> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.key == key)
            .map(|e| &e.value)
    }

    /// Entries whose keys this crate does not model, in order.
    pub fn unknown_entries(&self) -> impl Iterator<Item = &MetaEntry> {
        self.entries
            .iter()
            .filter(|e| !KNOWN_KEYS.contains(&e.key.as_str()))
    }

    /// Sets `key` to `value`, replacing an existing entry in place or appending one
    /// (before `traceEvents`, except `traceName`).
    pub fn set_raw(&mut self, key: &str, value: RawJson<'static>) {
        if let Some(entry) = self.entries.iter_mut().rev().find(|e| e.key == key) {
            entry.value = value;
            return;
        }
        let placement = if key == "traceName" {
            Placement::AfterEvents
        } else {
            Placement::BeforeEvents
        };
        self.entries.push(MetaEntry {
            key: key.to_owned(),
            value,
            placement,
        });
    }

    /// Sets `key` to `value` after `traceEvents` (replacing an existing entry in place):
    /// what a producer learns only once the events are written, such as what a
    /// converting reader skipped.
    pub fn set_raw_after_events(&mut self, key: &str, value: RawJson<'static>) {
        self.set_raw(key, value);
        if let Some(entry) = self.entries.iter_mut().rev().find(|e| e.key == key) {
            entry.placement = Placement::AfterEvents;
        }
    }

    /// Sets an integer-valued key.
    pub fn set_i64(&mut self, key: &str, value: i64) {
        self.set_raw(key, RawJson::trusted(value.to_string()));
    }

    /// Sets a string-valued key.
    pub fn set_str(&mut self, key: &str, value: &str) {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "\"\"".to_owned());
        self.set_raw(key, RawJson::trusted(text));
    }

    /// Sets `baseTimeNanoseconds`.
    pub fn set_base_time_ns(&mut self, base_time_ns: i64) {
        self.set_i64("baseTimeNanoseconds", base_time_ns);
    }

    /// Sets `distributedInfo` to `{"backend": …, "rank": r, "world_size": w}`.
    pub fn set_distributed(&mut self, backend: &str, rank: i64, world_size: i64) {
        let backend = serde_json::to_string(backend).unwrap_or_else(|_| "\"\"".to_owned());
        let text =
            format!(r#"{{"backend": {backend}, "rank": {rank}, "world_size": {world_size}}}"#);
        self.set_raw("distributedInfo", RawJson::trusted(text));
    }

    /// Appends an entry as read from a file (repeated keys are kept).
    pub(crate) fn push(&mut self, entry: MetaEntry) {
        self.entries.push(entry);
    }

    /// Drops entries placed after `traceEvents` (the reader refills them from the input).
    pub(crate) fn retain_before_events(&mut self) {
        self.entries
            .retain(|e| e.placement == Placement::BeforeEvents);
    }

    /// `schemaVersion`.
    pub fn schema_version(&self) -> Option<i64> {
        self.get("schemaVersion")?.deserialize().ok()
    }

    /// `baseTimeNanoseconds`: the epoch ns that relative `ts` values count from.
    pub fn base_time_ns(&self) -> Option<i64> {
        self.get("baseTimeNanoseconds")?.deserialize().ok()
    }

    /// `displayTimeUnit` (`"ms"` or `"ns"`).
    pub fn display_time_unit(&self) -> Option<String> {
        self.get("displayTimeUnit")?.deserialize().ok()
    }

    /// `traceName`: the path the profiler wrote to.
    pub fn trace_name(&self) -> Option<String> {
        self.get("traceName")?.deserialize().ok()
    }

    /// `distributedInfo`, decoded (the raw text stays in [`TraceMeta::get`]).
    pub fn distributed_info(&self) -> Option<DistributedInfo> {
        self.get("distributedInfo")?.deserialize().ok()
    }

    /// The rank, from `distributedInfo`.
    pub fn rank(&self) -> Option<i64> {
        self.distributed_info()?.rank
    }

    /// The world size, from `distributedInfo`.
    pub fn world_size(&self) -> Option<i64> {
        self.distributed_info()?.world_size
    }

    /// `deviceProperties`, decoded; entries that are not objects are skipped.
    pub fn device_properties(&self) -> Vec<DeviceProperties> {
        let Some(raw) = self.get("deviceProperties") else {
            return Vec::new();
        };
        let Ok(items) = raw.deserialize::<Vec<serde_json::Value>>() else {
            return Vec::new();
        };
        items
            .into_iter()
            .filter(|v| v.is_object())
            .map(|v| DeviceProperties {
                device_id: v.get("id").and_then(serde_json::Value::as_i64),
                name: v.get("name").and_then(|n| n.as_str()).map(str::to_owned),
                total_global_mem_bytes: v.get("totalGlobalMem").and_then(|n| n.as_u64()),
                raw: v,
            })
            .collect()
    }
}

/// One element of `deviceProperties`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceProperties {
    /// `id`: the device index (the `pid` of its events).
    pub device_id: Option<i64>,
    /// `name`, e.g. `"NVIDIA A100-PG509-200"`.
    pub name: Option<String>,
    /// `totalGlobalMem`.
    pub total_global_mem_bytes: Option<u64>,
    /// The whole object, for vendor-specific fields.
    pub raw: serde_json::Value,
}

/// `distributedInfo`, as PyTorch writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct DistributedInfo {
    /// `backend` (`"nccl"`, `"gloo"`).
    pub backend: Option<String>,
    /// `rank`.
    pub rank: Option<i64>,
    /// `world_size`.
    pub world_size: Option<i64>,
    /// `pg_count`.
    pub pg_count: Option<i64>,
    /// `pg_config`: one entry per process group.
    #[serde(default)]
    pub pg_config: Vec<ProcessGroupConfig>,
}

/// One element of `distributedInfo.pg_config`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ProcessGroupConfig {
    /// `pg_name`.
    pub pg_name: Option<String>,
    /// `pg_desc` (`"default_pg"`).
    pub pg_desc: Option<String>,
    /// `backend_config` (`"cpu:gloo,cuda:gloo"`).
    pub backend_config: Option<String>,
    /// `pg_size`.
    pub pg_size: Option<i64>,
    /// `ranks`.
    #[serde(default)]
    pub ranks: Vec<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_access_reads_kineto_keys() {
        let mut meta = TraceMeta::kineto(Some(1_790_857_026_000_000_000));
        meta.set_raw(
            "distributedInfo",
            RawJson::parse(
                r#"{"backend": "gloo", "rank": 1, "world_size": 2, "pg_count": 1,
                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": [0, 1]}]}"#,
            )
            .unwrap(),
        );
        meta.set_i64("dropped_records", 42);
        assert_eq!(meta.schema_version(), Some(1));
        assert_eq!(meta.base_time_ns(), Some(1_790_857_026_000_000_000));
        assert_eq!(meta.rank(), Some(1));
        assert_eq!(meta.world_size(), Some(2));
        assert_eq!(
            meta.distributed_info().unwrap().pg_config[0].ranks,
            vec![0, 1]
        );
        assert_eq!(meta.display_time_unit().as_deref(), Some("ms"));
        let unknown: Vec<_> = meta.unknown_entries().map(|e| e.key.as_str()).collect();
        assert_eq!(unknown, ["dropped_records"]);
        assert_eq!(
            meta.get("dropped_records")
                .unwrap()
                .deserialize::<i64>()
                .unwrap(),
            42
        );
        meta.set_distributed("nccl", 3, 8);
        assert_eq!((meta.rank(), meta.world_size()), (Some(3), Some(8)));
    }
}
