//! A JSON Schema (draft 2020-12) validator for the keywords runq's own
//! schemas use, so that the suite checks its documents without building
//! a general validator crate (which cost the test build more CPU than any
//! other dependency).
//!
//! Supported: `type` (a name or a list), `const`, `enum`, `properties`,
//! `required`, `additionalProperties`, `propertyNames`, `items`,
//! `minItems`, `minimum`, `minLength`, `pattern`, `anyOf`, `oneOf`, and
//! `$ref` to `#/$defs/NAME`. Annotations (`title`, `description`, `$id`,
//! `$schema`, `$defs`) are skipped. Any other keyword is refused with a
//! panic, so a schema can never hold a rule this validator silently
//! ignores.

use regex::Regex;
use serde_json::{Map, Value};

/// Keywords that carry no rule.
const ANNOTATIONS: &[&str] = &["title", "description", "$id", "$schema", "$defs"];

/// Keywords with a rule this validator checks.
const RULES: &[&str] = &[
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "items",
    "minItems",
    "minimum",
    "minLength",
    "pattern",
    "anyOf",
    "oneOf",
    "$ref",
];

/// Every way `doc` breaks `schema`, each as "where: what" (empty when it
/// matches). `root` is the document `$ref`s resolve in.
pub fn violations(root: &Value, schema: &Value, doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(root, schema, doc, "", &mut out);
    out
}

/// Checks `doc` at `path` against `schema`, appending what fails.
fn check(root: &Value, schema: &Value, doc: &Value, path: &str, out: &mut Vec<String>) {
    let rules = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return out.push(format!("{path}: no value is allowed here")),
        Value::Object(rules) => rules,
        other => panic!("schema at {path} is not an object or a boolean: {other}"),
    };
    for (keyword, rule) in rules {
        if ANNOTATIONS.contains(&keyword.as_str()) {
            continue;
        }
        assert!(
            RULES.contains(&keyword.as_str()),
            "schema keyword {keyword:?} (at {path}) is not supported by runq-testkit's validator"
        );
        check_keyword(root, rules, keyword, rule, doc, path, out);
    }
}

/// Applies one keyword of an object schema.
fn check_keyword(
    root: &Value,
    rules: &Map<String, Value>,
    keyword: &str,
    rule: &Value,
    doc: &Value,
    path: &str,
    out: &mut Vec<String>,
) {
    match keyword {
        "type" => check_type(rule, doc, path, out),
        "const" if doc != rule => out.push(format!("{path}: {doc} is not {rule}")),
        "enum" if !as_array(rule).contains(doc) => {
            out.push(format!("{path}: {doc} is not one of {rule}"))
        }
        "$ref" => check(root, resolve(root, rule), doc, path, out),
        "anyOf" | "oneOf" => check_alternatives(root, keyword, rule, doc, path, out),
        "properties" | "required" | "additionalProperties" | "propertyNames" => {
            if let Value::Object(fields) = doc {
                check_object(root, rules, keyword, rule, fields, path, out);
            }
        }
        "items" | "minItems" => {
            if let Value::Array(items) = doc {
                check_array(root, keyword, rule, items, path, out);
            }
        }
        "minimum" => {
            if let (Some(x), Some(min)) = (doc.as_f64(), rule.as_f64()) {
                if x < min {
                    out.push(format!("{path}: {doc} is below the minimum {rule}"));
                }
            }
        }
        "minLength" | "pattern" => {
            if let Value::String(s) = doc {
                check_string(keyword, rule, s, path, out);
            }
        }
        _ => {}
    }
}

/// `type`: one name or a list of names.
fn check_type(rule: &Value, doc: &Value, path: &str, out: &mut Vec<String>) {
    let names: Vec<&str> = match rule {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        other => panic!("type at {path} is neither a name nor a list: {other}"),
    };
    if !names.iter().any(|name| has_type(name, doc, path)) {
        out.push(format!("{path}: {doc} is not of type {rule}"));
    }
}

/// Whether `doc` is of the JSON Schema type `name` (an integer is any
/// number without a fractional part).
fn has_type(name: &str, doc: &Value, path: &str) -> bool {
    match name {
        "null" => doc.is_null(),
        "boolean" => doc.is_boolean(),
        "string" => doc.is_string(),
        "array" => doc.is_array(),
        "object" => doc.is_object(),
        "number" => doc.is_number(),
        "integer" => doc.is_i64() || doc.is_u64() || doc.as_f64().is_some_and(|x| x.fract() == 0.0),
        other => panic!("unknown type {other:?} at {path}"),
    }
}

/// `anyOf` (at least one alternative matches) and `oneOf` (exactly one).
fn check_alternatives(
    root: &Value,
    keyword: &str,
    rule: &Value,
    doc: &Value,
    path: &str,
    out: &mut Vec<String>,
) {
    let matching = as_array(rule)
        .iter()
        .filter(|alt| violations_at(root, alt, doc, path).is_empty())
        .count();
    let ok = if keyword == "oneOf" {
        matching == 1
    } else {
        matching >= 1
    };
    if !ok {
        out.push(format!(
            "{path}: {matching} of the {keyword} alternatives match {doc}"
        ));
    }
}

/// The object keywords, on an object value.
fn check_object(
    root: &Value,
    rules: &Map<String, Value>,
    keyword: &str,
    rule: &Value,
    fields: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let declared = rules.get("properties").and_then(Value::as_object);
    match keyword {
        "properties" => {
            for (name, sub) in as_object(rule) {
                if let Some(value) = fields.get(name) {
                    check(root, sub, value, &format!("{path}/{name}"), out);
                }
            }
        }
        "required" => {
            for name in as_array(rule).iter().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    out.push(format!("{path}: required field {name:?} is missing"));
                }
            }
        }
        "additionalProperties" => {
            for (name, value) in fields {
                if !declared.is_some_and(|d| d.contains_key(name)) {
                    check(root, rule, value, &format!("{path}/{name}"), out);
                }
            }
        }
        _ => {
            for name in fields.keys() {
                let key = Value::String(name.clone());
                check(root, rule, &key, &format!("{path}/{name} (name)"), out);
            }
        }
    }
}

/// `items` and `minItems`, on an array value.
fn check_array(
    root: &Value,
    keyword: &str,
    rule: &Value,
    items: &[Value],
    path: &str,
    out: &mut Vec<String>,
) {
    if keyword == "items" {
        for (i, item) in items.iter().enumerate() {
            check(root, rule, item, &format!("{path}/{i}"), out);
        }
    } else if (items.len() as u64) < rule.as_u64().expect("minItems is a count") {
        out.push(format!("{path}: {} items, fewer than {rule}", items.len()));
    }
}

/// `minLength` and `pattern`, on a string value.
fn check_string(keyword: &str, rule: &Value, s: &str, path: &str, out: &mut Vec<String>) {
    if keyword == "minLength" {
        let min = rule.as_u64().expect("minLength is a count");
        if (s.chars().count() as u64) < min {
            out.push(format!("{path}: {s:?} is shorter than {min}"));
        }
        return;
    }
    let pattern = rule.as_str().expect("pattern is a string");
    let re = Regex::new(pattern).unwrap_or_else(|e| panic!("pattern {pattern:?}: {e}"));
    if !re.is_match(s) {
        out.push(format!("{path}: {s:?} does not match {pattern}"));
    }
}

/// The violations of one alternative, without touching the caller's list.
fn violations_at(root: &Value, schema: &Value, doc: &Value, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    check(root, schema, doc, path, &mut out);
    out
}

/// The schema a local `$ref` (`#/$defs/NAME`) points at.
fn resolve<'a>(root: &'a Value, reference: &Value) -> &'a Value {
    let r = reference.as_str().expect("$ref is a string");
    let name = r
        .strip_prefix("#/$defs/")
        .unwrap_or_else(|| panic!("$ref {r:?}: only #/$defs/NAME is supported"));
    root.get("$defs")
        .and_then(|defs| defs.get(name))
        .unwrap_or_else(|| panic!("$ref {r:?} names no definition"))
}

fn as_array(rule: &Value) -> &[Value] {
    rule.as_array().expect("a list in the schema")
}

fn as_object(rule: &Value) -> &Map<String, Value> {
    rule.as_object().expect("an object in the schema")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["tool", "n"],
            "additionalProperties": false,
            "properties": {
                "tool": { "const": "run" },
                "n": { "type": "integer", "minimum": 1 },
                "kind": { "enum": ["a", "b"] },
                "id": { "type": "string", "pattern": "^[0-9]+$", "minLength": 2 },
                "rows": { "type": "array", "minItems": 1, "items": { "$ref": "#/$defs/row" } },
                "maybe": { "anyOf": [ { "type": "null" }, { "$ref": "#/$defs/row" } ] },
                "one": { "oneOf": [ { "type": "integer" }, { "type": "number" } ] },
                "counts": {
                    "type": "object",
                    "propertyNames": { "enum": ["x", "y"] },
                    "additionalProperties": { "type": "integer" }
                }
            },
            "$defs": { "row": { "type": ["object"], "required": ["v"] } }
        })
    }

    fn errors(doc: Value) -> Vec<String> {
        let s = schema();
        violations(&s, &s, &doc)
    }

    #[test]
    fn a_document_that_keeps_every_rule_passes() {
        let doc = json!({
            "tool": "run", "n": 2, "kind": "a", "id": "42", "rows": [{"v": 1}],
            "maybe": null, "one": 1.5, "counts": {"x": 3}
        });
        assert_eq!(errors(doc), Vec::<String>::new());
    }

    #[test]
    fn each_broken_rule_is_named_with_its_place() {
        let cases = [
            (json!({"tool": "run"}), "required field \"n\""),
            (json!({"tool": "hud", "n": 1}), "/tool"),
            (json!({"tool": "run", "n": 0}), "below the minimum"),
            (json!({"tool": "run", "n": 1.5}), "not of type"),
            (json!({"tool": "run", "n": 1, "kind": "c"}), "not one of"),
            (json!({"tool": "run", "n": 1, "id": "4x"}), "does not match"),
            (json!({"tool": "run", "n": 1, "id": "4"}), "shorter than"),
            (json!({"tool": "run", "n": 1, "rows": []}), "fewer than"),
            (json!({"tool": "run", "n": 1, "rows": [{}]}), "/rows/0"),
            (json!({"tool": "run", "n": 1, "maybe": 3}), "anyOf"),
            (json!({"tool": "run", "n": 1, "one": 2}), "2 of the oneOf"),
            (json!({"tool": "run", "n": 1, "counts": {"z": 1}}), "(name)"),
            (
                json!({"tool": "run", "n": 1, "counts": {"x": "1"}}),
                "/counts/x",
            ),
            (json!({"tool": "run", "n": 1, "extra": 1}), "/extra"),
        ];
        for (doc, expect) in cases {
            let errs = errors(doc.clone());
            assert!(
                errs.iter().any(|e| e.contains(expect)),
                "{doc}: expected {expect:?} in {errs:?}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "not supported")]
    fn an_unsupported_keyword_is_refused_not_skipped() {
        let s = json!({ "type": "string", "maxLength": 3 });
        violations(&s, &s, &json!("abcd"));
    }
}
