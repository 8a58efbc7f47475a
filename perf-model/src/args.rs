//! An operator's arguments as `record_shapes` writes them: the `Input Dims`, `Input type`,
//! `Input Strides` and `Concrete Inputs` arrays of a `cpu_op` event, parsed.

use serde_json::Value;

use crate::dtype::DType;

/// The shape of one argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A tensor's dims (`[]` for a 0-d tensor or a non-tensor argument).
    Tensor(Vec<i64>),
    /// A `TensorList`: each tensor's dims.
    List(Vec<Vec<i64>>),
}

/// One argument of an operator.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// Its dims.
    pub shape: Shape,
    /// Its `Input type` entry as written (`c10::BFloat16`, `Scalar`, `TensorList`, …).
    pub type_name: String,
    /// The element type when the argument is a tensor of a known type.
    pub dtype: Option<DType>,
    /// Its strides (same form as `shape`; empty when the trace has none).
    pub strides: Shape,
    /// Its `Concrete Inputs` entry (the value of a scalar argument, `""` for tensors).
    pub concrete: String,
}

impl Arg {
    /// The dims when the argument is a tensor of a known element type.
    pub fn tensor_dims(&self) -> Option<&[i64]> {
        match (&self.shape, self.dtype) {
            (Shape::Tensor(dims), Some(_)) => Some(dims),
            _ => None,
        }
    }

    /// Elements of a tensor argument (a 0-d tensor has one), `None` for others.
    pub fn numel(&self) -> Option<u64> {
        self.tensor_dims().map(numel)
    }

    /// Bytes of a tensor argument, `None` for others.
    pub fn bytes(&self) -> Option<u64> {
        Some(self.numel()? * self.dtype?.bytes())
    }

    /// The concrete value as an integer (`"1"`, `"-1"`), when it is one.
    pub fn int(&self) -> Option<i64> {
        self.concrete.trim().parse().ok()
    }

    /// The concrete value as a number (`"0."`, `"0.125"`), when it is one.
    pub fn float(&self) -> Option<f64> {
        self.concrete.trim().parse().ok()
    }

    /// The concrete value as a boolean (`"True"`, `"False"`), when it is one.
    pub fn bool(&self) -> Option<bool> {
        match self.concrete.trim() {
            "True" | "true" => Some(true),
            "False" | "false" => Some(false),
            _ => None,
        }
    }

    /// The concrete value as an integer list (`"[16, 16]"`), when it is one.
    pub fn int_list(&self) -> Option<Vec<i64>> {
        let text = self.concrete.trim();
        let inner = text.strip_prefix('[')?.strip_suffix(']')?;
        if inner.trim().is_empty() {
            return Some(Vec::new());
        }
        inner.split(',').map(|x| x.trim().parse().ok()).collect()
    }
}

/// Elements of a tensor with `dims` (a 0-d tensor has one).
pub fn numel(dims: &[i64]) -> u64 {
    dims.iter().map(|&d| d.max(0) as u64).product()
}

/// An operator's arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpArgs {
    /// The arguments, in order.
    pub args: Vec<Arg>,
}

/// Why the arguments could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsError {
    /// Which array (`Input Dims`, …) and what was wrong with it.
    pub message: String,
}

impl std::fmt::Display for ArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgsError {}

impl OpArgs {
    /// Parses the four arrays' JSON texts (as written in the event's args; an empty text
    /// stands for an absent array). `Input Dims` decides how many arguments there are;
    /// the other arrays may be absent or shorter (older traces).
    pub fn parse(
        dims: &str,
        types: &str,
        strides: &str,
        concrete: &str,
    ) -> Result<OpArgs, ArgsError> {
        let dims = parse_array("Input Dims", dims)?;
        let types = parse_array("Input type", types)?;
        let strides = parse_array("Input Strides", strides)?;
        let concrete = parse_array("Concrete Inputs", concrete)?;
        let mut args = Vec::with_capacity(dims.len());
        for (i, dim) in dims.iter().enumerate() {
            let shape = shape_of(dim).ok_or_else(|| ArgsError {
                message: format!("Input Dims: entry {i} is not a list of sizes: {dim}"),
            })?;
            let type_name = types
                .get(i)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let dtype = DType::parse(&type_name);
            let strides = strides
                .get(i)
                .and_then(shape_of)
                .unwrap_or(Shape::Tensor(Vec::new()));
            let concrete = match concrete.get(i) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            args.push(Arg {
                shape,
                type_name,
                dtype,
                strides,
                concrete,
            });
        }
        Ok(OpArgs { args })
    }

    /// Argument `i`.
    pub fn get(&self, i: usize) -> Option<&Arg> {
        self.args.get(i)
    }

    /// The tensor arguments (known element type, not a list), in order.
    pub fn tensors(&self) -> impl Iterator<Item = &Arg> {
        self.args.iter().filter(|a| a.tensor_dims().is_some())
    }
}

fn parse_array(what: &str, text: &str) -> Result<Vec<Value>, ArgsError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(other) => Err(ArgsError {
            message: format!("{what}: not an array: {other}"),
        }),
        Err(e) => Err(ArgsError {
            message: format!("{what}: not JSON ({e}): {text}"),
        }),
    }
}

fn shape_of(value: &Value) -> Option<Shape> {
    let items = value.as_array()?;
    if items.iter().all(Value::is_i64) {
        return Some(Shape::Tensor(
            items.iter().filter_map(Value::as_i64).collect(),
        ));
    }
    items
        .iter()
        .map(|item| item.as_array()?.iter().map(Value::as_i64).collect())
        .collect::<Option<Vec<Vec<i64>>>>()
        .map(Shape::List)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flash_attention_op_s_arrays_parse_into_tensors_and_scalars() {
        let args = OpArgs::parse(
            "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            "[[572416, 35776, 64, 1], [572416, 35776, 64, 1], [572416, 35776, 64, 1], [], [], [], []]",
            r#"["", "", "", "0.", "True", "False", "0.125"]"#,
        )
        .unwrap();
        assert_eq!(args.args.len(), 7);
        assert_eq!(args.tensors().count(), 3);
        assert_eq!(args.args[0].bytes(), Some(16 * 16 * 559 * 64 * 2));
        assert_eq!(args.args[3].float(), Some(0.0));
        assert_eq!(args.args[4].bool(), Some(true));
        assert_eq!(args.args[6].float(), Some(0.125));
    }

    #[test]
    fn tensor_lists_and_int_lists_parse() {
        let args = OpArgs::parse(
            "[[[128, 1, 768], [128, 196, 768]], []]",
            r#"["TensorList", "Scalar"]"#,
            "",
            r#"["", "[16, 16]"]"#,
        )
        .unwrap();
        assert_eq!(
            args.args[0].shape,
            Shape::List(vec![vec![128, 1, 768], vec![128, 196, 768]])
        );
        assert_eq!(args.args[1].int_list(), Some(vec![16, 16]));
    }

    #[test]
    fn a_damaged_array_is_an_error_that_names_it() {
        let err = OpArgs::parse("[[1, 2]", "", "", "").unwrap_err();
        assert!(err.message.starts_with("Input Dims"), "{err}");
    }
}
