//! Instances of a schema for the engines to judge: one that conforms, and documents that
//! each break exactly one of its constraints.
//!
//! Written for the keywords relata's schemas use (`type`, `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `enum`, `const`, `anyOf`, string and
//! array bounds, and `extract-p3`'s one pattern shape); a schema outside them yields no
//! instance, which the test reports rather than passing silently.

use serde_json::{Map, Value, json};

/// Most violations asked about per schema: enough to cover every kind, few enough that a
/// run stays short.
const MAX_VIOLATIONS: usize = 24;

/// A document that conforms to `schema`, or `None` when none can be made.
pub fn valid(schema: &Value) -> Option<Value> {
    if let Some(c) = schema.get("const") {
        return Some(c.clone());
    }
    if let Some(e) = schema.get("enum") {
        return e.as_array()?.first().cloned();
    }
    if let Some(any) = schema.get("anyOf") {
        return any.as_array()?.iter().find_map(valid);
    }
    match schema.get("type")?.as_str()? {
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for r in schema.get("required").and_then(Value::as_array)? {
                let r = r.as_str()?;
                out.insert(r.to_owned(), valid(props?.get(r)?)?);
            }
            Some(Value::Object(out))
        }
        "array" => {
            if let Some(prefix) = schema.get("prefixItems").and_then(Value::as_array) {
                return prefix
                    .iter()
                    .map(valid)
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Array);
            }
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            let max = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .map(|m| m as usize);
            // At least one item where one is allowed, so the item schema is exercised.
            let n = min.max(usize::from(max != Some(0)));
            let item = schema.get("items").filter(|i| i.is_object());
            match item {
                Some(item) => Some(Value::Array(vec![valid(item)?; n])),
                None if n == 0 => Some(json!([])),
                None => None,
            }
        }
        "string" => match schema.get("pattern").and_then(Value::as_str) {
            Some(p) => pattern_instance(p, 0),
            None => {
                let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                Some(Value::from(text(min.max(1))))
            }
        },
        "boolean" => Some(Value::Bool(true)),
        "null" => Some(Value::Null),
        "integer" | "number" => Some(schema.get("minimum").cloned().unwrap_or(json!(0))),
        _ => None,
    }
}

/// Plain text of exactly `n` characters: words and single spaces.
fn text(n: usize) -> String {
    let mut s: String = "word ".repeat(n / 5 + 1)[..n].to_owned();
    if s.ends_with(' ') {
        s.pop();
        s.push('x');
    }
    s
}

/// An instance of `extract-p3`'s two pattern shapes, `^A( (B|C)){m,n}[.]?$` and
/// `^(B|C)( (B|C)){m,n}$`, with `extra` more repetitions than the least.
fn pattern_instance(p: &str, extra: usize) -> Option<Value> {
    let body = p.strip_prefix('^')?.strip_suffix('$')?;
    let body = body.strip_suffix("[.]?").unwrap_or(body);
    let (head, rest) = body.split_once("( (")?;
    let (alts, count) = rest.split_once(")){")?;
    let min: usize = count.split(',').next()?.parse().ok()?;
    let word = alts.split('|').next()?.replace("[.]", ".");
    let head = if head.starts_with('(') {
        head.trim_start_matches('(')
            .trim_end_matches(')')
            .split('|')
            .next()?
            .replace("[.]", ".")
    } else {
        head.replace("[.]", ".")
    };
    let mut s = head;
    for _ in 0..min + extra {
        s.push(' ');
        s.push_str(&word);
    }
    Some(Value::from(s))
}

/// Documents that each break one constraint of `schema`, starting from `doc` (which
/// conforms).
pub fn violations(schema: &Value, doc: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    collect(schema, doc, &mut Vec::new(), &mut out);
    if out.len() > MAX_VIOLATIONS {
        // Every kth, so each kind of violation keeps a share of the sample.
        let step = out.len().div_ceil(MAX_VIOLATIONS);
        out = out.into_iter().step_by(step).collect();
    }
    out.into_iter()
        .map(|(path, v)| replace(doc, &path, v))
        .collect()
}

/// A path into a document: object keys and array indices.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// `Some(new)` replaces the value at the path; `None` removes it.
type Edit = (Vec<Step>, Option<Value>);

fn collect(schema: &Value, value: &Value, path: &mut Vec<Step>, out: &mut Vec<Edit>) {
    let here = |v: Option<Value>| (path.clone(), v);
    if let Some(c) = schema.get("const") {
        if let Some(s) = c.as_str() {
            out.push(here(Some(Value::from(format!("{s}x")))));
        }
        return;
    }
    if schema.get("enum").is_some() {
        out.push(here(Some(Value::from("not-one-of-the-values"))));
        return;
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        let allows = |t: &str| any.iter().any(|b| b.get("type") == Some(&Value::from(t)));
        if !allows("number") && !allows("integer") {
            out.push(here(Some(json!(7))));
        }
        // The branch the value takes is judged like any other value.
        if let Some(branch) = any
            .iter()
            .find(|b| valid(b).as_ref().is_some_and(|v| same_kind(v, value)))
        {
            collect(branch, value, path, out);
        }
        return;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let Some(obj) = value.as_object() else { return };
            if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                let mut with = path.clone();
                with.push(Step::Key("zz_unknown_field".into()));
                out.push((with, Some(json!(1))));
            }
            if let Some(first) = schema
                .get("required")
                .and_then(Value::as_array)
                .and_then(|r| r.first())
                .and_then(Value::as_str)
            {
                let mut without = path.clone();
                without.push(Step::Key(first.to_owned()));
                out.push((without, None));
            }
            let props = schema.get("properties").and_then(Value::as_object);
            for (k, v) in obj {
                if let Some(child) = props.and_then(|p| p.get(k)) {
                    path.push(Step::Key(k.clone()));
                    collect(child, v, path, out);
                    path.pop();
                }
            }
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                return;
            };
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && max < 60
                && let Some(first) = items.first()
            {
                let mut longer = items.clone();
                while longer.len() <= max as usize {
                    longer.push(first.clone());
                }
                out.push(here(Some(Value::Array(longer))));
            }
            let item_schema = schema.get("items").filter(|i| i.is_object());
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            for (i, v) in items.iter().enumerate() {
                let s = prefix.and_then(|p| p.get(i)).or(item_schema);
                if let Some(s) = s {
                    path.push(Step::Index(i));
                    collect(s, v, path, out);
                    path.pop();
                }
            }
        }
        Some("string") => {
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                let long = match schema.get("pattern").and_then(Value::as_str) {
                    // Over the bound and still matching the pattern: what xgrammar and
                    // llama.cpp let through when a pattern stands beside maxLength.
                    Some(p) => (0..200)
                        .filter_map(|extra| pattern_instance(p, extra))
                        .find(|v| v.as_str().is_some_and(|s| s.chars().count() > max as usize)),
                    None => Some(Value::from(text(max as usize + 1))),
                };
                if let Some(long) = long {
                    out.push(here(Some(long)));
                }
            }
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && min > 0
                && schema.get("pattern").is_none()
            {
                out.push(here(Some(Value::from(text(min as usize - 1)))));
            }
        }
        _ => {}
    }
}

fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// `doc` with the value at `path` replaced (or removed, or added as a new key).
fn replace(doc: &Value, path: &[Step], new: Option<Value>) -> Value {
    let mut out = doc.clone();
    let mut at = &mut out;
    for (i, step) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        match step {
            Step::Key(k) => {
                let obj = at.as_object_mut().expect("a key into an object");
                if last {
                    match new {
                        Some(v) => {
                            obj.insert(k.clone(), v);
                        }
                        None => {
                            obj.shift_remove(k);
                        }
                    }
                    return out;
                }
                at = obj.get_mut(k).expect("a key the document has");
            }
            Step::Index(n) => {
                let arr = at.as_array_mut().expect("an index into an array");
                if last {
                    match new {
                        Some(v) => arr[*n] = v,
                        None => {
                            arr.remove(*n);
                        }
                    }
                    return out;
                }
                at = &mut arr[*n];
            }
        }
    }
    new.unwrap_or(Value::Null)
}
