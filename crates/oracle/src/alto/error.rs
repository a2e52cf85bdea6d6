//! ALTO error responses (RFC 7285 §8.5).

use serde_json::{Map, Value, json};
use thiserror::Error;

/// The media type of an ALTO error response (RFC 7285 §8.5.1).
pub const ERROR_MEDIA_TYPE: &str = "application/alto-error+json";

/// The ALTO error codes of RFC 7285 §8.5.2, Table 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Parsing error in request (including identifiers).
    Syntax,
    /// A required JSON field is missing.
    MissingField,
    /// The type of the value of a JSON field is invalid.
    InvalidFieldType,
    /// The value of a JSON field is invalid.
    InvalidFieldValue,
}

impl ErrorCode {
    /// The code as it appears in `meta.code`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Syntax => "E_SYNTAX",
            ErrorCode::MissingField => "E_MISSING_FIELD",
            ErrorCode::InvalidFieldType => "E_INVALID_FIELD_TYPE",
            ErrorCode::InvalidFieldValue => "E_INVALID_FIELD_VALUE",
        }
    }

    /// Every code, for counters.
    pub const ALL: [ErrorCode; 4] = [
        ErrorCode::Syntax,
        ErrorCode::MissingField,
        ErrorCode::InvalidFieldType,
        ErrorCode::InvalidFieldValue,
    ];
}

/// Why a request was refused, as RFC 7285 §8.5.2 reports it: a code, and optionally the full
/// path of the field (`cost-type/cost-mode`), the offending value as a string, or a
/// `syntax-error` text with the position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{}{}{}{}", code.as_str(),
    field.as_ref().map(|f| format!(" field {f}")).unwrap_or_default(),
    value.as_ref().map(|v| format!(" value {v:?}")).unwrap_or_default(),
    syntax_error.as_ref().map(|s| format!(": {s}")).unwrap_or_default())]
pub struct AltoError {
    /// The error code.
    pub code: ErrorCode,
    /// The field at fault (full path, `/`-separated).
    pub field: Option<String>,
    /// The invalid value, as a string (§8.5.2: "If the invalid value is not a string, the ALTO
    /// server MUST convert it to a string"); only with `field`.
    pub value: Option<String>,
    /// For [`ErrorCode::Syntax`]: what could not be parsed, and where.
    pub syntax_error: Option<String>,
}

impl AltoError {
    /// E_SYNTAX with a human-readable text.
    pub fn syntax(text: impl Into<String>) -> AltoError {
        AltoError {
            code: ErrorCode::Syntax,
            field: None,
            value: None,
            syntax_error: Some(text.into()),
        }
    }

    /// E_MISSING_FIELD for `field`.
    pub fn missing(field: impl Into<String>) -> AltoError {
        AltoError {
            code: ErrorCode::MissingField,
            field: Some(field.into()),
            value: None,
            syntax_error: None,
        }
    }

    /// E_INVALID_FIELD_TYPE for `field`.
    pub fn bad_type(field: impl Into<String>) -> AltoError {
        AltoError {
            code: ErrorCode::InvalidFieldType,
            field: Some(field.into()),
            value: None,
            syntax_error: None,
        }
    }

    /// E_INVALID_FIELD_VALUE for `field` holding `value` (a JSON string as itself, anything
    /// else as its JSON text, as §8.5.2 says).
    pub fn bad_value(field: impl Into<String>, value: &Value) -> AltoError {
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        AltoError {
            code: ErrorCode::InvalidFieldValue,
            field: Some(field.into()),
            value: Some(value),
            syntax_error: None,
        }
    }

    /// The HTTP status it is sent with: every ALTO-layer error of RFC 7285 is a fault of the
    /// request, 400 Bad Request (the status RFC 8895 §6.6 shows for the same errors).
    pub fn http_status(&self) -> u16 {
        400
    }

    /// The error resource (`application/alto-error+json`, §8.5.2).
    pub fn to_json(&self) -> Value {
        let mut meta = Map::new();
        meta.insert("code".into(), json!(self.code.as_str()));
        if let Some(f) = &self.field {
            meta.insert("field".into(), json!(f));
            if let Some(v) = &self.value {
                meta.insert("value".into(), json!(v));
            }
        }
        if let Some(s) = &self.syntax_error {
            meta.insert("syntax-error".into(), json!(s));
        }
        json!({ "meta": meta })
    }
}
