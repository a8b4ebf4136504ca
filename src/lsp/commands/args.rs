//! Decoding the single object argument of an `agentls.*` command into its `Params` type
//! (`lsp::protocol`), and the errors a command answers with.
//!
//! Invariant: every rejection is an `invalid params` JSON-RPC error whose `data` is the path of
//! the offending field (`text`, `context.uri`, `files[0].acceptedHunks`) and whose message names
//! it and says what was expected in JSON's words, so a client author can fix the call. A field
//! that is missing or `null` where one is required says so.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;
use tower_lsp_server::jsonrpc::{Error, ErrorCode};

/// An `invalid params` error naming a field.
pub fn invalid_field(field: &str, expected: &str) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: format!("invalid argument `{field}`: expected {expected}").into(),
        data: Some(Value::String(field.to_string())),
    }
}

/// The folder a `rootUri` names; `None` when it is absent.
pub fn root_of(root_uri: Option<&str>) -> Result<Option<std::path::PathBuf>, Error> {
    match root_uri {
        None => Ok(None),
        Some(text) => crate::lsp::convert::parse_uri(text)
            .and_then(|u| crate::lsp::convert::path_of(&u))
            .map(Some)
            .ok_or_else(|| invalid_field("rootUri", "a file: URI of a folder")),
    }
}

/// A `RequestFailed` (-32803) error with a message that says what to do.
pub fn request_failed(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::ServerError(-32803), message: message.into().into(), data: None }
}

/// Reads `arguments` (`[]`, `[{…}]`, or missing, which is `{}`) as `P`.
pub fn decode<P: DeserializeOwned>(arguments: Vec<Value>) -> Result<P, Error> {
    let argument = the_argument(arguments)?;
    serde_path_to_error::deserialize(&argument).map_err(|error| rejection::<P>(&argument, error))
}

fn the_argument(arguments: Vec<Value>) -> Result<Value, Error> {
    let mut arguments = arguments.into_iter();
    let argument = match arguments.next() {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(object @ Value::Object(_)) => object,
        Some(_) => return Err(invalid_field("arguments[0]", "one object argument")),
    };
    if arguments.next().is_some() {
        return Err(invalid_field("arguments", "exactly one object argument"));
    }
    Ok(argument)
}

/// The error for an argument serde refused: the field's path, and what it expected.
fn rejection<P: DeserializeOwned>(
    argument: &Value,
    error: serde_path_to_error::Error<serde_json::Error>,
) -> Error {
    let mut path: Vec<Segment> = error.path().iter().cloned().collect();
    let message = error.inner().to_string();
    let missing = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`'));
    let mut expected = match missing {
        // Serde names a missing field at its parent, without saying its type: the field set to
        // `null` says it.
        Some(field) => {
            path.push(Segment::Map { key: field.to_string() });
            probe::<P>(argument, &path, Value::Null)
        }
        None => message.rsplit_once(", expected ").map(|(_, expected)| expected.to_string()),
    };
    if expected.as_deref() == Some("string or map") {
        // A choice (a unit enum): an unknown name lists the known ones.
        expected = probe::<P>(argument, &path, Value::String(String::new())).or(expected);
    }
    let field = field_name(&path);
    let required = missing.is_some() || message.starts_with("invalid type: null");
    match expected {
        Some(expected) => {
            let note = if required { " (it is required)" } else { "" };
            invalid_field(&field, &format!("{}{note}", in_json_words(&expected)))
        }
        None => Error {
            code: ErrorCode::InvalidParams,
            message: format!("invalid argument `{field}`: {message}").into(),
            data: Some(Value::String(field)),
        },
    }
}

/// What decoding expects at `path` when it holds `value` instead.
fn probe<P: DeserializeOwned>(argument: &Value, path: &[Segment], value: Value) -> Option<String> {
    let (last, parents) = path.split_last()?;
    let mut changed = argument.clone();
    let mut parent = &mut changed;
    for segment in parents {
        parent = match segment {
            Segment::Map { key } => parent.get_mut(key.as_str())?,
            Segment::Seq { index } => parent.get_mut(*index)?,
            _ => return None,
        };
    }
    match last {
        Segment::Map { key } => {
            parent.as_object_mut()?.insert(key.clone(), value);
        }
        Segment::Seq { index } => *parent.get_mut(*index)? = value,
        _ => return None,
    }
    let error = serde_path_to_error::deserialize::<_, P>(&changed).err()?;
    let same_place = error.path().iter().map(|s| s.to_string()).eq(path.iter().map(|s| s.to_string()));
    let message = error.inner().to_string();
    same_place.then(|| message.rsplit_once(", expected ").map(|(_, expected)| expected.to_string()))?
}

/// `files[0].acceptedHunks`.
fn field_name(path: &[Segment]) -> String {
    let mut name = String::new();
    for segment in path {
        if !name.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            name.push('.');
        }
        name.push_str(&segment.to_string());
    }
    name
}

/// Serde's name of a type, as JSON says it.
fn in_json_words(expected: &str) -> String {
    match expected {
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        "string or map" => "a string".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".into(),
        "f32" | "f64" => "a number".into(),
        other if other.starts_with("struct ") => "an object".into(),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::lsp::protocol::{
        ConfigureParams, InputParams, ListSessionsParams, PromptParams, ResolvePermissionParams,
        ResolveReviewParams,
    };

    fn rejected<P: DeserializeOwned + std::fmt::Debug>(argument: Value) -> (String, Value) {
        let error = decode::<P>(vec![argument]).expect_err("rejected");
        assert_eq!(error.code, ErrorCode::InvalidParams);
        (error.message.to_string(), error.data.expect("the field"))
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            rejected::<InputParams>(json!({"sessionId": "s", "text": 3})),
            ("invalid argument `text`: expected a string".into(), json!("text"))
        );
        assert_eq!(
            rejected::<InputParams>(json!({"sessionId": "", "text": "x"})),
            ("invalid argument `sessionId`: expected a non-empty string".into(), json!("sessionId"))
        );
        assert_eq!(
            rejected::<InputParams>(json!({"text": "x"})),
            ("invalid argument `sessionId`: expected a string (it is required)".into(), json!("sessionId"))
        );
        assert_eq!(
            rejected::<InputParams>(json!({"sessionId": null, "text": "x"})),
            ("invalid argument `sessionId`: expected a string (it is required)".into(), json!("sessionId"))
        );
        assert_eq!(
            rejected::<ResolvePermissionParams>(json!({"requestId": "r", "decision": "maybe"})),
            (
                "invalid argument `decision`: expected one of `allow_once`, `allow_always`, `deny`".into(),
                json!("decision")
            )
        );
        assert_eq!(
            rejected::<ResolvePermissionParams>(json!({"requestId": "r"})).0,
            "invalid argument `decision`: expected one of `allow_once`, `allow_always`, `deny` (it is required)"
        );
        assert_eq!(
            rejected::<ResolvePermissionParams>(json!({"requestId": "r", "decision": 5})).0,
            "invalid argument `decision`: expected one of `allow_once`, `allow_always`, `deny`"
        );
    }

    #[test]
    fn nested_fields_are_named_by_their_path() {
        assert_eq!(
            rejected::<PromptParams>(json!({"text": "x", "context": "not an object"})),
            ("invalid argument `context`: expected an object".into(), json!("context"))
        );
        assert_eq!(
            rejected::<PromptParams>(json!({"text": "x", "context": {"uri": 7}})).1,
            json!("context.uri")
        );
        assert_eq!(
            rejected::<PromptParams>(json!({"text": "x", "context": {}})),
            (
                "invalid argument `context.uri`: expected a string (it is required)".into(),
                json!("context.uri")
            )
        );
        let files = |files: Value| json!({"reviewId": "r", "decision": "accept", "files": files});
        assert_eq!(
            rejected::<ResolveReviewParams>(files(json!([{"uri": "u", "acceptedHunks": "all"}]))),
            (
                "invalid argument `files[0].acceptedHunks`: expected an array".into(),
                json!("files[0].acceptedHunks")
            )
        );
        assert_eq!(
            rejected::<ResolveReviewParams>(files(json!([{"uri": "u", "acceptedHunks": [-1]}]))).0,
            "invalid argument `files[0].acceptedHunks[0]`: expected a non-negative integer"
        );
        assert_eq!(rejected::<ResolveReviewParams>(files(json!(["u"]))).1, json!("files[0]"));
        assert_eq!(
            rejected::<ConfigureParams>(json!({"sessionId": "s", "reasoningEffort": "max"})).0,
            "invalid argument `reasoningEffort`: expected one of `minimal`, `low`, `medium`, `high`, `default`"
        );
    }

    #[test]
    fn argument_list_shapes() {
        assert!(decode::<ListSessionsParams>(vec![]).is_ok());
        assert!(decode::<ListSessionsParams>(vec![Value::Null]).is_ok());
        let (message, field) = {
            let error = decode::<ListSessionsParams>(vec![json!("x")]).unwrap_err();
            (error.message.to_string(), error.data)
        };
        assert_eq!(
            (message.as_str(), field),
            ("invalid argument `arguments[0]`: expected one object argument", Some(json!("arguments[0]")))
        );
        assert!(decode::<ListSessionsParams>(vec![json!({}), json!({})]).is_err());
        // Fields a command does not know are ignored, as before.
        assert!(decode::<ListSessionsParams>(vec![json!({"verbose": true})]).is_ok());
    }
}
