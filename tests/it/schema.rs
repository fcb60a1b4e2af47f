//! Checks response bodies against `schema/openapi.yaml` with a validator for the subset of JSON
//! Schema the document uses (type, properties, required, additionalProperties, items, enum,
//! const, $ref, oneOf, bounds). Unknown keywords fail loudly, so the subset cannot drift.

use std::sync::OnceLock;

use edgemail::http::Router;
use hyper::Method;
use serde_json::Value;

use crate::client::Resp;

pub fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(edgemail::app::OPENAPI_JSON).expect("openapi json"))
}

fn router() -> &'static Router {
    static ROUTER: OnceLock<Router> = OnceLock::new();
    ROUTER.get_or_init(|| Router::new(edgemail::api::routes()).expect("routes"))
}

fn resolve(value: &Value) -> &Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.strip_prefix('#').expect("local ref");
            resolve(doc().pointer(pointer).unwrap_or_else(|| panic!("dangling $ref {reference}")))
        }
        None => value,
    }
}

/// The documented schema of the answer to `method path` with `status`.
pub fn response_schema(method: &str, path: &str, status: u16) -> Option<&'static Value> {
    let path_only = path.split('?').next().unwrap_or(path);
    let m: Method = method.parse().expect("method");
    let template = match router().find(&m, path_only) {
        Ok(found) => found.route.path,
        // No route: the answer is a bare error object (404 or 405).
        Err(_) => return Some(&doc()["components"]["schemas"]["Error"]),
    };
    let op = &doc()["paths"][template][method.to_ascii_lowercase()];
    assert!(op.is_object(), "{method} {template} is not documented");
    let response = op["responses"]
        .get(status.to_string())
        .unwrap_or_else(|| panic!("status {status} of {method} {template} is not documented"));
    resolve(response)["content"]["application/json"].get("schema")
}

pub fn check_response(method: &str, path: &str, resp: &Resp) {
    let Some(schema) = response_schema(method, path, resp.status) else {
        return;
    };
    let body: Value = serde_json::from_slice(&resp.body).unwrap_or_else(|e| {
        panic!("{method} {path} -> {}: body is not JSON ({e}): {}", resp.status, resp.text())
    });
    if let Err(why) = validate(schema, &body, "$") {
        panic!(
            "{method} {path} -> {}: body does not match the documented schema: {why}\nbody: {body}",
            resp.status
        );
    }
}

const KNOWN: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "$ref",
    "oneOf",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "maxProperties",
    "format",
    "description",
    "example",
    "examples",
    "default",
    "pattern",
    "title",
    "deprecated",
    "readOnly",
];

pub fn validate(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(schema);
    let Some(obj) = schema.as_object() else {
        return Ok(());
    };
    if let Some(unknown) = obj.keys().find(|k| !KNOWN.contains(&k.as_str()) && !k.starts_with("x-"))
    {
        return Err(format!(
            "{at}: schema keyword `{unknown}` is not supported by the test validator"
        ));
    }
    if let Some(options) = obj.get("oneOf").and_then(Value::as_array) {
        let matching = options.iter().filter(|o| validate(o, value, at).is_ok()).count();
        if matching != 1 {
            return Err(format!(
                "{at}: matches {matching} of the oneOf alternatives, not exactly one"
            ));
        }
    }
    if let Some(types) = obj.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !allowed.iter().any(|t| type_matches(t, value)) {
            return Err(format!("{at}: expected {allowed:?}, got {value}"));
        }
    }
    if let Some(c) = obj.get("const")
        && c != value
    {
        return Err(format!("{at}: expected const {c}, got {value}"));
    }
    if let Some(options) = obj.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {options:?}"));
    }
    match value {
        Value::String(s) => {
            let n = s.chars().count() as u64;
            bound(obj, "minLength", n, |limit, n| n >= limit, at)?;
            bound(obj, "maxLength", n, |limit, n| n <= limit, at)?;
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = obj.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                return Err(format!("{at}: {x} is below {min}"));
            }
            if let Some(max) = obj.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                return Err(format!("{at}: {x} is above {max}"));
            }
        }
        Value::Array(items) => {
            bound(obj, "minItems", items.len() as u64, |limit, n| n >= limit, at)?;
            bound(obj, "maxItems", items.len() as u64, |limit, n| n <= limit, at)?;
            if let Some(item_schema) = obj.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item_schema, item, &format!("{at}[{i}]"))?;
                }
            }
        }
        Value::Object(map) => {
            bound(obj, "maxProperties", map.len() as u64, |limit, n| n <= limit, at)?;
            for name in obj.get("required").and_then(Value::as_array).into_iter().flatten() {
                let name = name.as_str().unwrap_or("");
                if !map.contains_key(name) {
                    return Err(format!("{at}: required field `{name}` is missing"));
                }
            }
            let props = obj.get("properties").and_then(Value::as_object);
            for (key, v) in map {
                match props.and_then(|p| p.get(key)) {
                    Some(s) => validate(s, v, &format!("{at}.{key}"))?,
                    None => match obj.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            return Err(format!("{at}: field `{key}` is not documented"));
                        }
                        Some(extra @ Value::Object(_)) => {
                            validate(extra, v, &format!("{at}.{key}"))?
                        }
                        _ => {}
                    },
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn bound(
    obj: &serde_json::Map<String, Value>,
    key: &str,
    actual: u64,
    ok: impl Fn(u64, u64) -> bool,
    at: &str,
) -> Result<(), String> {
    match obj.get(key).and_then(Value::as_u64) {
        Some(limit) if !ok(limit, actual) => {
            Err(format!("{at}: {key} {limit} violated by {actual}"))
        }
        _ => Ok(()),
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}
