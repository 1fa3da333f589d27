//! The API's published contract: an OpenAPI 3.1 document generated from
//! the handlers and the types of [`super::model`], served at
//! `/v1/openapi.json`. CI checks it with a validator and runs Schemathesis
//! against a live `husk serve` (`scripts/check-api`).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::errors::{ApiError, ErrorKind};
use super::model;

/// The document's description: what every operation shares.
const DESCRIPTION: &str = "The HTTP API of `husk serve`. Every `/v1` call takes a tenant's token \
as `Authorization: Bearer <token>` and sees only that tenant's topics and jobs: anything else is \
404, exactly as if it did not exist. Every refusal is a JSON body `{\"error\", \"message\"}` whose \
`error` names the kind of refusal. Times are RFC 3339 in UTC.";

#[derive(OpenApi)]
#[openapi(
    info(title = "husk", description = DESCRIPTION),
    paths(super::healthz),
    components(schemas(ApiError, ErrorKind, model::JobStatus, model::OutcomeName)),
    modifiers(&BearerToken),
    security(("tenant_token" = [])),
    tags(
        (name = "jobs", description = "Enqueue, look up, list and cancel jobs."),
        (name = "incidents", description = "Jobs that failed past their retry policy."),
        (name = "outcomes", description = "The stream of ended jobs."),
        (name = "topics", description = "The tenant's topics; pausing them."),
        (name = "plugins", description = "Plugin versions: deploy and roll back."),
        (name = "health", description = "Liveness."),
    ),
)]
struct Contract;

/// Declares the bearer token every `/v1` operation takes.
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some("A tenant's API token (`[tenants.NAME] token` in husk.toml)."))
            .build();
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("tenant_token", SecurityScheme::Http(scheme));
    }
}

/// The whole document: the `/v1` routes' parts (their paths relative to
/// `/v1`) in the shared frame.
pub(super) fn finish(mut v1: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let paths = std::mem::take(&mut v1.paths.paths);
    v1.paths.paths = paths.into_iter().map(|(path, item)| (format!("/v1{path}"), item)).collect();
    let mut doc = Contract::openapi();
    doc.merge(v1);
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// The API's OpenAPI document.
pub fn document() -> utoipa::openapi::OpenApi {
    finish(super::v1().into_openapi())
}

/// `doc` as JSON, as `/v1/openapi.json` serves it. (utoipa 5.5 writes a
/// link's `operationId`, `operationRef` and `requestBody` in snake case,
/// which OpenAPI does not know: they are renamed here.)
pub(super) fn json(doc: &utoipa::openapi::OpenApi) -> serde_json::Value {
    let mut json = serde_json::to_value(doc).expect("the document serializes");
    rename_link_fields(&mut json);
    json
}

fn rename_link_fields(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(links)) = map.get_mut("links") {
                for link in links.values_mut().filter_map(Value::as_object_mut) {
                    for (from, to) in [
                        ("operation_id", "operationId"),
                        ("operation_ref", "operationRef"),
                        ("request_body", "requestBody"),
                    ] {
                        if let Some(field) = link.remove(from) {
                            link.insert(to.to_owned(), field);
                        }
                    }
                }
            }
            map.values_mut().for_each(rename_link_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(rename_link_fields),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::document;

    fn doc() -> Value {
        super::json(&document())
    }

    /// Every `$ref` in `value`.
    fn refs(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(target)) => found.push(target.clone()),
                        _ => refs(value, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }

    #[test]
    fn the_document_is_openapi_3_1_and_every_reference_resolves() {
        let doc = doc();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(!found.is_empty());
        for target in found {
            let name = target.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{target}"));
            assert!(doc["components"]["schemas"].get(name).is_some(), "{target} is not defined");
        }
    }

    #[test]
    fn every_v1_operation_takes_the_tenant_token_and_documents_its_refusal() {
        let doc = doc();
        let paths = doc["paths"].as_object().unwrap();
        assert_eq!(paths.len(), 15, "{:?}", paths.keys().collect::<Vec<_>>());
        for (path, item) in paths {
            for (method, operation) in item.as_object().unwrap() {
                if path == "/healthz" {
                    assert_eq!(operation["security"], json!([{}]), "/healthz takes no token");
                    continue;
                }
                assert!(path.starts_with("/v1/"), "{path}");
                assert!(operation.get("security").is_none(), "{method} {path}: the document's default applies");
                let unauthorized = &operation["responses"]["401"]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(unauthorized, "#/components/schemas/ApiError", "{method} {path}");
            }
        }
        assert_eq!(doc["security"], json!([{ "tenant_token": [] }]));
    }

    #[test]
    fn links_name_operations_that_exist_in_openapis_own_words() {
        let doc = doc();
        let mut operations = Vec::new();
        for item in doc["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                operations.push(operation["operationId"].as_str().unwrap().to_owned());
            }
        }
        let enqueue = &doc["paths"]["/v1/topics/{topic}/jobs"]["post"]["responses"]["201"]["links"]["GetJob"];
        assert_eq!(enqueue["operationId"], "get", "{enqueue}");
        assert!(enqueue.get("operation_id").is_none(), "{enqueue}");
        let text = doc.to_string();
        for (at, _) in text.match_indices("\"operationId\":\"") {
            let id = text[at + 15..].split('"').next().unwrap();
            assert!(operations.iter().any(|o| o == id), "a link to `{id}`, no such operation");
        }
    }
}
