//! Tool parameter schemas as each dialect accepts them. Tools written here use plain object
//! schemas every provider takes; an MCP server's schema may use what a provider refuses, and the
//! whole request would fail. Each rule below removes one feature one provider is known to reject:
//!
//! - Anthropic and OpenAI: `anyOf`/`oneOf`/`allOf`/`enum`/`not` at the root ("input_schema does
//!   not support oneOf, allOf, or anyOf at the top level"; OpenAI: the root must be a plain
//!   object). They are dropped; the root's `properties` stay.
//! - OpenAI (Responses and Chat Completions): an array schema without `items` ("array schema
//!   missing items") gets `"items": {}`.
//! - Gemini (`parametersJsonSchema`): `$schema` is not among its keywords and is removed
//!   everywhere; references into `$defs`/`definitions` are inlined ("reference to undefined
//!   schema"), a recursive one ends as `{}` past [`MAX_REF_DEPTH`].
//!
//! Invariant: a schema that uses none of these comes back borrowed, unchanged; the registry
//! still validates arguments against the tool's own schema.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// How deep references are inlined before a recursive one stops.
pub const MAX_REF_DEPTH: usize = 8;

/// The schema families of the providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Anthropic,
    OpenAi,
    Gemini,
}

const ROOT_COMBINATORS: &[&str] = &["anyOf", "oneOf", "allOf", "enum", "not"];

/// `schema` as `dialect` accepts it.
pub fn for_dialect(schema: &Value, dialect: Dialect) -> Cow<'_, Value> {
    let needed = match dialect {
        Dialect::Anthropic => has_root_combinator(schema),
        Dialect::OpenAi => has_root_combinator(schema) || any(schema, &|o| is_array_without_items(o)),
        Dialect::Gemini => any(schema, &|o| o.contains_key("$schema") || o.contains_key("$ref")),
    };
    if !needed {
        return Cow::Borrowed(schema);
    }
    let mut out = schema.clone();
    match dialect {
        Dialect::Anthropic => drop_root_combinators(&mut out),
        Dialect::OpenAi => {
            drop_root_combinators(&mut out);
            walk(&mut out, &mut |o| {
                if is_array_without_items(o) {
                    o.insert("items".into(), Value::Object(Map::new()));
                }
            });
        }
        Dialect::Gemini => {
            let definitions = definitions(schema);
            out = inline_refs(out, &definitions, 0);
            if let Some(root) = out.as_object_mut() {
                root.remove("$defs");
                root.remove("definitions");
            }
            walk(&mut out, &mut |o| {
                o.remove("$schema");
            });
        }
    }
    Cow::Owned(out)
}

fn has_root_combinator(schema: &Value) -> bool {
    schema.as_object().is_some_and(|o| ROOT_COMBINATORS.iter().any(|k| o.contains_key(*k)))
}

fn drop_root_combinators(schema: &mut Value) {
    if let Some(root) = schema.as_object_mut() {
        ROOT_COMBINATORS.iter().for_each(|k| drop(root.remove(*k)));
        root.entry("type").or_insert_with(|| Value::String("object".into()));
    }
}

fn is_array_without_items(object: &Map<String, Value>) -> bool {
    object.get("type").and_then(Value::as_str) == Some("array") && !object.contains_key("items")
}

/// Whether any object of the schema (not of its `properties` names) satisfies `test`.
fn any(value: &Value, test: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    match value {
        Value::Object(object) => test(object) || object.values().any(|v| any(v, test)),
        Value::Array(items) => items.iter().any(|v| any(v, test)),
        _ => false,
    }
}

fn walk(value: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    match value {
        Value::Object(object) => {
            visit(object);
            object.values_mut().for_each(|v| walk(v, visit));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, visit)),
        _ => {}
    }
}

fn definitions(schema: &Value) -> Map<String, Value> {
    let mut all = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = schema.get(key) {
            for (name, def) in defs {
                all.insert(format!("#/{key}/{name}"), def.clone());
            }
        }
    }
    all
}

fn inline_refs(value: Value, definitions: &Map<String, Value>, depth: usize) -> Value {
    match value {
        Value::Object(mut object) => {
            if let Some(Value::String(target)) = object.get("$ref").cloned() {
                object.remove("$ref");
                let resolved = match definitions.get(&target) {
                    Some(def) if depth < MAX_REF_DEPTH => inline_refs(def.clone(), definitions, depth + 1),
                    _ => Value::Object(Map::new()),
                };
                // Keywords beside the reference (a description) win over the definition's.
                if let Value::Object(mut merged) = resolved {
                    for (k, v) in object {
                        merged.insert(k, inline_refs(v, definitions, depth));
                    }
                    return Value::Object(merged);
                }
                return resolved;
            }
            Value::Object(object.into_iter().map(|(k, v)| (k, inline_refs(v, definitions, depth))).collect())
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| inline_refs(v, definitions, depth)).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn plain_schemas_pass_every_dialect_unchanged() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "array", "items": {"type": "integer"}}}, "required": ["path"], "additionalProperties": false});
        for dialect in [Dialect::Anthropic, Dialect::OpenAi, Dialect::Gemini] {
            assert!(matches!(for_dialect(&schema, dialect), Cow::Borrowed(_)), "{dialect:?}");
        }
    }
}
