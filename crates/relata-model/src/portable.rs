//! The JSON Schema keywords every server family compiles and enforces.
//!
//! relata sends a schema with every structured request, and users run it against OpenAI,
//! vLLM (xgrammar or llguidance underneath), Ollama and llama.cpp's `llama-server` (both
//! compile with llama.cpp's C++ `json_schema_to_grammar`) and llama-cpp-python (its own
//! Python converter). Each refuses or silently drops something the others take: OpenAI's
//! strict mode has no `prefixItems` and wants every object closed and every property
//! required; llama.cpp refuses `items: false`; xgrammar and llama.cpp drop `maxLength`
//! beside a `pattern`. What every one of them compiles *and enforces* is checked against
//! the real engines by the `engines` system test (`tests/engines/`, run by
//! `scripts/test`); this module holds the one rule set no engine here can check for us —
//! OpenAI's, from its documented subset — and [`sendable`], the last step before a schema
//! leaves relata.

use serde_json::Value;

/// Keywords OpenAI's strict structured outputs accept (its "Supported schemas"):
/// anything else in a schema is refused with a 400.
const OPENAI_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$defs",
    "$ref",
    "description",
    "title",
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// OpenAI's documented size limits on one schema.
const OPENAI_MAX_DEPTH: usize = 10;
const OPENAI_MAX_PROPERTIES: usize = 5_000;
const OPENAI_MAX_ENUM_VALUES: usize = 1_000;
const OPENAI_MAX_STRING_CHARS: usize = 120_000;

/// Why OpenAI's strict mode would refuse `schema`, every reason found; empty when it
/// takes it. The root must be an object; every object must set `additionalProperties:
/// false` and list every property in `required`; `items` must be a schema (never
/// `false`, never a tuple); only [`OPENAI_KEYWORDS`] may appear; and the schema must stay
/// inside the documented depth, property, enum and string-size limits.
pub fn openai_strict_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&Value::from("object")) {
        problems.push("the root is not an object".to_owned());
    }
    let mut tally = Tally::default();
    walk(schema, "#", 0, &mut problems, &mut tally);
    if tally.properties > OPENAI_MAX_PROPERTIES {
        problems.push(format!(
            "{} object properties, over {OPENAI_MAX_PROPERTIES}",
            tally.properties
        ));
    }
    if tally.enum_values > OPENAI_MAX_ENUM_VALUES {
        problems.push(format!(
            "{} enum values, over {OPENAI_MAX_ENUM_VALUES}",
            tally.enum_values
        ));
    }
    if tally.string_chars > OPENAI_MAX_STRING_CHARS {
        problems.push(format!(
            "{} characters of names, enum and const values, over {OPENAI_MAX_STRING_CHARS}",
            tally.string_chars
        ));
    }
    problems
}

#[derive(Default)]
struct Tally {
    properties: usize,
    enum_values: usize,
    string_chars: usize,
}

fn walk(v: &Value, path: &str, depth: usize, problems: &mut Vec<String>, tally: &mut Tally) {
    let Some(o) = v.as_object() else {
        problems.push(format!("{path}: a schema must be an object, not {v}"));
        return;
    };
    for k in o.keys() {
        if !OPENAI_KEYWORDS.contains(&k.as_str()) {
            problems.push(format!("{path}: keyword {k} is not supported"));
        }
    }
    let is_object = o.get("type") == Some(&Value::from("object"))
        || o.get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.contains(&Value::from("object")));
    if is_object {
        if depth + 1 > OPENAI_MAX_DEPTH {
            problems.push(format!(
                "{path}: objects nested deeper than {OPENAI_MAX_DEPTH}"
            ));
        }
        if o.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(format!("{path}: additionalProperties must be false"));
        }
        let props = o.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = props {
            tally.properties += props.len();
            for (name, child) in props {
                tally.string_chars += name.chars().count();
                if !required.contains(&name.as_str()) {
                    problems.push(format!("{path}: property {name} is not required"));
                }
                walk(
                    child,
                    &format!("{path}/properties/{name}"),
                    depth + 1,
                    problems,
                    tally,
                );
            }
        }
        for r in &required {
            if !props.is_some_and(|p| p.contains_key(*r)) {
                problems.push(format!("{path}: required {r} is not a property"));
            }
        }
    }
    match o.get("items") {
        Some(items @ Value::Object(_)) => {
            walk(items, &format!("{path}/items"), depth, problems, tally)
        }
        Some(other) => problems.push(format!("{path}: items must be a schema, not {other}")),
        None => {}
    }
    if let Some(any) = o.get("anyOf") {
        match any.as_array() {
            Some(branches) => {
                for (i, b) in branches.iter().enumerate() {
                    walk(b, &format!("{path}/anyOf/{i}"), depth, problems, tally);
                }
            }
            None => problems.push(format!("{path}: anyOf must be an array")),
        }
    }
    if let Some(values) = o.get("enum").and_then(Value::as_array) {
        tally.enum_values += values.len();
        tally.string_chars += values
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.chars().count())
            .sum::<usize>();
    }
    if let Some(c) = o.get("const").and_then(Value::as_str) {
        tally.string_chars += c.chars().count();
    }
}

/// The schema as it leaves relata: annotations no engine needs (`$schema`, `title`)
/// dropped, and every `maxLength` capped at [`crate::wire::GRAMMAR_MAX_STRING_CHARS`]
/// (llama.cpp's grammars turn a bound of `n` into `n` nested rules). Only ever tighter
/// than the contract: the gate judges every response against the contract's own bounds.
pub fn sendable(schema: Value) -> Value {
    let mut schema = crate::wire::grammar_safe(schema);
    if let Some(o) = schema.as_object_mut() {
        // shift_remove: the order of a schema's keys is the order a model writes them in.
        o.shift_remove("$schema");
        o.shift_remove("title");
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_closed_schema_with_every_property_required_passes() {
        let s = json!({"type": "object", "additionalProperties": false, "required": ["a"],
                       "properties": {"a": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]}}});
        assert!(
            openai_strict_problems(&s).is_empty(),
            "{:?}",
            openai_strict_problems(&s)
        );
    }

    #[test]
    fn each_rule_is_seen_failing() {
        let tuple = json!({"type": "object", "additionalProperties": false, "required": ["c"],
            "properties": {"c": {"type": "array", "prefixItems": [{"type": "string"}], "items": false}}});
        let p = openai_strict_problems(&tuple);
        assert!(p.iter().any(|p| p.contains("prefixItems")), "{p:?}");
        assert!(
            p.iter().any(|p| p.contains("items must be a schema")),
            "{p:?}"
        );
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let p = openai_strict_problems(&open);
        assert!(
            p.iter().any(|p| p.contains("additionalProperties")),
            "{p:?}"
        );
        assert!(p.iter().any(|p| p.contains("not required")), "{p:?}");
        let keyed = json!({"type": "object", "additionalProperties": {"type": "string"},
                           "propertyNames": {"pattern": "^S"}});
        let p = openai_strict_problems(&keyed);
        assert!(p.iter().any(|p| p.contains("propertyNames")), "{p:?}");
        let root = json!({"anyOf": [{"type": "object"}]});
        assert!(
            openai_strict_problems(&root)
                .iter()
                .any(|p| p.contains("root"))
        );
    }

    #[test]
    fn sendable_drops_annotations_and_caps_lengths() {
        let s = sendable(json!({"$schema": "x", "title": "t", "type": "object",
                                "properties": {"q": {"type": "string", "maxLength": 2000}}}));
        assert!(s.get("$schema").is_none() && s.get("title").is_none());
        assert_eq!(
            s["properties"]["q"]["maxLength"],
            json!(crate::wire::GRAMMAR_MAX_STRING_CHARS)
        );
    }
}
