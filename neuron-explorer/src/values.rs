//! Any Arrow value of a profile table as JSON (for the small tables kept whole:
//! `Metadata`, `Summary`, `SystemProfileMetadata`).

use arrow_array::Array;
use arrow_schema::DataType;
use serde_json::{Map, Value};

use crate::table::{Batch, BoolCol, FloatCol, IntCol, ListCol, StrCol};

/// The value at `row` of `array` as JSON (`null` for nulls and types not read).
pub fn json_value(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => BoolCol::wrap(array)
            .get(row)
            .map_or(Value::Null, Value::Bool),
        DataType::Float32 | DataType::Float64 => FloatCol::wrap(array)
            .get(row)
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => StrCol::wrap(array)
            .get(row)
            .map_or(Value::Null, |s| Value::String(s.to_owned())),
        DataType::List(_) | DataType::LargeList(_) => Value::Array(
            ListCol::wrap(array)
                .get(row)
                .into_iter()
                .map(Value::String)
                .collect(),
        ),
        _ => IntCol::wrap(array)
            .get(row)
            .map_or(Value::Null, |v| Value::Number(v.into())),
    }
}

/// Row `row` of a batch as a JSON object, column by column.
pub fn row_object(batch: &Batch, row: usize) -> Map<String, Value> {
    let schema = batch.rows.schema();
    schema
        .fields()
        .iter()
        .zip(batch.rows.columns())
        .map(|(field, array)| (field.name().clone(), json_value(array.as_ref(), row)))
        .collect()
}
