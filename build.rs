//! Converts `schema/openapi.yaml` to JSON at build time, so the server serves both forms without a
//! YAML parser in the binary, and a malformed document fails the build instead of a request.

use std::path::PathBuf;

use yaml_rust2::{Yaml, YamlLoader};

fn to_json(yaml: &Yaml) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    Ok(match yaml {
        Yaml::Real(s) => {
            let n: f64 = s.parse().map_err(|_| format!("bad number {s}"))?;
            serde_json::Number::from_f64(n).map(Value::Number).ok_or(format!("bad number {s}"))?
        }
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    other => return Err(format!("unsupported key {other:?}")),
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        Yaml::Null => Value::Null,
        other => return Err(format!("unsupported YAML node {other:?}")),
    })
}

fn main() {
    println!("cargo::rerun-if-changed=schema/openapi.yaml");
    let text = std::fs::read_to_string("schema/openapi.yaml").expect("read schema/openapi.yaml");
    let docs = YamlLoader::load_from_str(&text).expect("schema/openapi.yaml is not valid YAML");
    let doc = docs.first().expect("schema/openapi.yaml is empty");
    let json = to_json(doc).expect("schema/openapi.yaml has a node JSON cannot hold");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("openapi.json");
    std::fs::write(out, serde_json::to_vec(&json).expect("serialize")).expect("write openapi.json");
}
