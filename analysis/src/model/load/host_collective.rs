//! Collectives that ran on the host: gloo's. A `ProcessGroupGloo` collective has no
//! device row; its work runs on a gloo worker thread inside a `gloo:<op>` user annotation
//! (c10d's `Work` opens it with the collective's profiling title and closes it when the
//! work finishes, `../shared/reference/torch-runtime-c10d-dynamo.md`), which carries the
//! tensor's `Input Dims` and `Input type`. That annotation is the collective as this rank
//! saw it: its arguments are read from the name and the shapes. It names no process group
//! and no sequence number, so ranks match its instances by operation, size and order.

use crate::model::CollectiveArgs;

/// The collective a `gloo:<op>` user annotation stands for, if `name` is one and its
/// `Input Dims` give the tensor's elements.
pub(super) fn gloo_collective(
    category: &str,
    name: &str,
    input_dims: Option<&str>,
    input_types: Option<&str>,
) -> Option<Box<CollectiveArgs>> {
    if category != "user_annotation" {
        return None;
    }
    let op = name.strip_prefix("gloo:")?;
    let dims: Vec<Vec<i64>> = serde_json::from_str(input_dims?).ok()?;
    let nelems = dims
        .first()?
        .iter()
        .try_fold(1i64, |n, &d| n.checked_mul(d.max(0)))?;
    let dtype = input_types
        .and_then(|t| serde_json::from_str::<Vec<String>>(t).ok())
        .and_then(|t| t.into_iter().next())
        .map(|t| scalar_type(&t))
        .unwrap_or_default();
    Some(Box::new(CollectiveArgs {
        // NCCL's spellings of `Collective name` (`allreduce`), as the device rows have.
        collective: op.replace("all_", "all"),
        process_group: String::new(),
        seq: None,
        in_nelems: nelems,
        out_nelems: nelems,
        dtype,
        group_size: -1,
        occurrence: 0,
        in_splits: Vec::new(),
        out_splits: Vec::new(),
        group_ranks: Vec::new(),
    }))
}

/// `Input type`'s C++ spelling (`float`, `c10::BFloat16`, `long int`) as `dtype` spells
/// the `c10::ScalarType` (`Float`, `BFloat16`, `Long`); unknown spellings stay as they are.
fn scalar_type(input_type: &str) -> String {
    let t = input_type.trim_start_matches("c10::");
    match t {
        "float" => "Float",
        "double" => "Double",
        "long int" | "long" | "int64_t" => "Long",
        "int" => "Int",
        "short int" | "short" => "Short",
        "signed char" => "Char",
        "unsigned char" => "Byte",
        "bool" => "Bool",
        "Half" | "BFloat16" | "Float8_e4m3fn" | "Float8_e5m2" => t,
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gloo_annotation_is_its_collective() {
        let args = gloo_collective(
            "user_annotation",
            "gloo:all_reduce",
            Some("[[4, 256]]"),
            Some(r#"["float"]"#),
        )
        .unwrap();
        assert_eq!(
            (
                args.collective.as_str(),
                args.in_nelems,
                args.dtype.as_str()
            ),
            ("allreduce", 1024, "Float")
        );
        assert!(gloo_collective("cpu_op", "gloo:all_reduce", Some("[[4]]"), None).is_none());
        assert!(
            gloo_collective("user_annotation", "nccl:all_reduce", Some("[[4]]"), None).is_none()
        );
        assert!(gloo_collective("user_annotation", "gloo:barrier", Some("[]"), None).is_none());
    }
}
