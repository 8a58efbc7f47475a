//! Overriding a profile from a JSON file.
//!
//! The file is one JSON object. Its optional `"base"` names the built-in profile to
//! start from (default `trn2`); every other key names a [`DeviceProfile`] field and
//! replaces its value. Unknown keys are errors, so a typo never goes unnoticed.
//!
//! ```json
//! { "base": "trn2", "name": "trn2-slow-dma", "dma_fixed_latency_ns": 2000, "hbm_bytes_per_sec": 3.0e12 }
//! ```

use std::path::Path;

use serde_json::Value;

use super::DeviceProfile;
use crate::BackendError;

impl DeviceProfile {
    /// A profile from a JSON override.
    ///
    /// The text is one JSON object. Its optional `"base"` names the built-in profile to
    /// start from (default `trn2`); every other key names a [`DeviceProfile`] field and
    /// replaces its value. Unknown keys and unusable values are errors naming them.
    /// [`DeviceProfile::to_json`] writes every field in this format.
    ///
    /// ```
    /// use neuron_backend::DeviceProfile;
    /// let profile = DeviceProfile::from_json(r#"{"base": "trn2-lnc1", "dma_fixed_latency_ns": 2000}"#)?;
    /// assert_eq!(profile.lnc, 1);
    /// assert_eq!(profile.dma_fixed_latency_ns, 2000);
    /// # Ok::<(), neuron_backend::BackendError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, BackendError> {
        Self::from_json_at(text, "<string>")
    }

    /// A profile from a JSON override file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, BackendError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|err| BackendError::Profile {
            source_name: path.display().to_string(),
            reason: err.to_string(),
        })?;
        Self::from_json_at(&text, &path.display().to_string())
    }

    fn from_json_at(text: &str, source_name: &str) -> Result<Self, BackendError> {
        let fail = |reason: String| BackendError::Profile {
            source_name: source_name.to_string(),
            reason,
        };
        let overrides: Value =
            serde_json::from_str(text).map_err(|err| fail(format!("not JSON: {err}")))?;
        let Value::Object(mut overrides) = overrides else {
            return Err(fail("expected a JSON object".into()));
        };
        let base_name = match overrides.remove("base") {
            None => "trn2".to_string(),
            Some(Value::String(name)) => name,
            Some(other) => return Err(fail(format!("\"base\" must be a string, got {other}"))),
        };
        let base = DeviceProfile::builtin(&base_name).ok_or_else(|| {
            fail(format!(
                "unknown base profile {base_name:?} (known: {})",
                DeviceProfile::BUILTIN.join(", ")
            ))
        })?;
        let Value::Object(mut merged) =
            serde_json::to_value(&base).map_err(|err| fail(err.to_string()))?
        else {
            return Err(fail("profile did not serialize to an object".into()));
        };
        for (key, value) in overrides {
            if !merged.contains_key(&key) {
                return Err(fail(format!("unknown profile field {key:?}")));
            }
            merged.insert(key, value);
        }
        let profile: DeviceProfile = serde_json::from_value(Value::Object(merged))
            .map_err(|err| fail(format!("bad value: {err}")))?;
        profile.validate().map_err(fail)?;
        Ok(profile)
    }

    /// The profile as JSON in the override format (every field, no `base`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_override_is_trn2() {
        assert_eq!(
            DeviceProfile::from_json("{}").unwrap(),
            DeviceProfile::trn2()
        );
    }

    #[test]
    fn full_dump_round_trips() {
        let trn3 = DeviceProfile::trn3();
        assert_eq!(DeviceProfile::from_json(&trn3.to_json()).unwrap(), trn3);
    }

    #[test]
    fn figures_whose_product_or_sum_wraps_a_u32_are_refused() {
        // Each of these wrapped to a small number in u32 arithmetic and passed the
        // limit in a release build (a debug build panicked instead).
        for (overrides, says) in [
            (
                r#"{"dma_engines": 65536, "dma_queues_per_engine": 65536}"#,
                "4294967296 queues",
            ),
            (r#"{"chips": 2147483648}"#, "got 8589934592"),
            (r#"{"cc_cores_per_core": 2147483648}"#, "got 4294967296 and"),
            (
                r#"{"compute_queues": 4294967295, "collective_queues": 3}"#,
                "and 4294967300",
            ),
        ] {
            let err = DeviceProfile::from_json(overrides).unwrap_err().to_string();
            assert!(err.contains(says), "{overrides}: {err}");
        }
    }

    #[test]
    fn errors_name_the_field_and_source() {
        let err = DeviceProfile::from_json(r#"{"dma_latency": 5}"#).unwrap_err();
        assert!(err.to_string().contains("dma_latency"), "{err}");
        let err = DeviceProfile::from_json(r#"{"lnc": 3}"#).unwrap_err();
        assert!(err.to_string().contains("lnc 3"), "{err}");
        let err = DeviceProfile::from_json(r#"{"base": "trn1"}"#).unwrap_err();
        assert!(err.to_string().contains("trn1"), "{err}");
        let err = DeviceProfile::from_file("/nonexistent/profile.json").unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/profile.json"),
            "{err}"
        );
    }
}
