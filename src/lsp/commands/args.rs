//! Decoding the single object argument of an `agentls.*` command.
//!
//! Invariant: every rejection is an `invalid params` JSON-RPC error whose message names the
//! offending field and says what was expected, so a client author can fix the call.

use serde_json::{Map, Value};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};

/// An `invalid params` error naming a field.
pub fn invalid_field(field: &str, expected: &str) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: format!("invalid argument `{field}`: expected {expected}").into(),
        data: Some(Value::String(field.to_string())),
    }
}

/// A `RequestFailed` (-32803) error with a message that says what to do.
pub fn request_failed(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::ServerError(-32803), message: message.into().into(), data: None }
}

/// The argument object of one command.
#[derive(Debug)]
pub struct CommandArgs {
    fields: Map<String, Value>,
}

impl CommandArgs {
    /// Accepts `[]`, `[{…}]` or a missing argument list (treated as `{}`).
    pub fn from_arguments(arguments: Vec<Value>) -> Result<Self, Error> {
        let mut arguments = arguments.into_iter();
        let fields = match arguments.next() {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(invalid_field("arguments[0]", "one object argument")),
        };
        if arguments.next().is_some() {
            return Err(invalid_field("arguments", "exactly one object argument"));
        }
        Ok(Self { fields })
    }

    /// The whole argument as a typed payload; a field that does not fit is named.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_value(Value::Object(self.fields.clone())).map_err(|e| Error {
            code: ErrorCode::InvalidParams,
            message: format!("invalid arguments: {e}").into(),
            data: None,
        })
    }

    pub fn from_object(fields: Map<String, Value>) -> Self {
        Self { fields }
    }

    fn present(&self, field: &str) -> Option<&Value> {
        self.fields.get(field).filter(|v| !v.is_null())
    }

    pub fn required_str(&self, field: &str) -> Result<String, Error> {
        match self.present(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(invalid_field(field, "a non-empty string")),
            Some(_) => Err(invalid_field(field, "a string")),
            None => Err(invalid_field(field, "a string (it is required)")),
        }
    }

    pub fn optional_str(&self, field: &str) -> Result<Option<String>, Error> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid_field(field, "a string")),
        }
    }

    /// A string restricted to `choices`.
    pub fn optional_choice(&self, field: &str, choices: &[&str]) -> Result<Option<String>, Error> {
        let expected = || {
            format!("one of {}", choices.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", "))
        };
        match self.optional_str(field) {
            Ok(Some(s)) if choices.contains(&s.as_str()) => Ok(Some(s)),
            Ok(Some(_)) | Err(_) => Err(invalid_field(field, &expected())),
            Ok(None) => Ok(None),
        }
    }

    pub fn required_choice(&self, field: &str, choices: &[&str]) -> Result<String, Error> {
        self.optional_choice(field, choices)?
            .ok_or_else(|| invalid_field(field, &format!("one of {} (it is required)", choices.join(", "))))
    }

    pub fn optional_object(&self, field: &str) -> Result<Option<CommandArgs>, Error> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Self { fields: map.clone() })),
            Some(_) => Err(invalid_field(field, "an object")),
        }
    }

    pub fn optional_array(&self, field: &str) -> Result<Option<Vec<Value>>, Error> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items.clone())),
            Some(_) => Err(invalid_field(field, "an array")),
        }
    }

    /// A typed value decoded with serde; the error still names `field`.
    pub fn optional_typed<T: serde::de::DeserializeOwned>(
        &self,
        field: &str,
        expected: &str,
    ) -> Result<Option<T>, Error> {
        match self.present(field) {
            None => Ok(None),
            Some(v) => {
                serde_json::from_value(v.clone()).map(Some).map_err(|_| invalid_field(field, expected))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(v: Value) -> CommandArgs {
        CommandArgs::from_arguments(vec![v]).expect("object")
    }

    #[test]
    fn errors_name_the_field() {
        let a = args(json!({"text": 3, "sessionId": ""}));
        assert_eq!(a.required_str("text").unwrap_err().message, "invalid argument `text`: expected a string");
        assert_eq!(
            a.required_str("sessionId").unwrap_err().message,
            "invalid argument `sessionId`: expected a non-empty string"
        );
        let err = a.required_str("missing").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert_eq!(err.data, Some(json!("missing")));
        let d = args(json!({"decision": "maybe"}));
        assert!(
            d.required_choice("decision", &["accept", "reject"]).unwrap_err().message.contains("`decision`")
        );
    }

    #[test]
    fn argument_list_shapes() {
        assert!(CommandArgs::from_arguments(vec![]).is_ok());
        assert!(CommandArgs::from_arguments(vec![json!("x")]).is_err());
        assert!(CommandArgs::from_arguments(vec![json!({}), json!({})]).is_err());
    }
}
