//! Prometheus adapter: instant queries against a Prometheus server (upstream's `Prometheus`
//! metrics source), answered as one number per node or per pod.
//!
//! - [`PrometheusClient::new`] builds the HTTP client from the policy's `PrometheusProvider`:
//!   the URL, an optional bearer token, a CA file or `insecureSkipVerify` for https, and the
//!   timeout of one query. TLS is rustls with the ring provider, as for kube.
//! - [`PrometheusClient::query`] runs `GET {url}/api/v1/query?query=...` and turns every way it
//!   can fail (connection refused, timeout, HTTP status, a login page instead of the API, ...)
//!   into one line that names the URL and what to check.
//! - [`parse_response`] (pure) reads the API's JSON: only an instant vector is accepted, every
//!   value must be a finite number ≥ 0, and each node (by the node label, upstream `instance`)
//!   or pod (by the `namespace` and `pod` labels) may have one series only.
//! - [`resolve_token`] finds the bearer token as upstream does: the Secret named by
//!   `authToken.secretReference` (data key `prometheusAuthToken`), or else, when running in a
//!   pod, the service account token.

use crate::policy::PrometheusProvider;
use crate::snapshot::usage::{check_value, NamedSamples, QueryTarget, Sample};
use serde::Deserialize;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// The data key of the Secret named by `authToken.secretReference` (upstream's
/// `prometheusAuthTokenSecretKey`).
pub const AUTH_TOKEN_SECRET_KEY: &str = "prometheusAuthToken";

/// The service account token of a pod, used when no Secret is named (upstream reads it through
/// client-go's `rest.InClusterConfig`).
pub const SERVICE_ACCOUNT_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// How many bytes of an unexpected answer an error message quotes.
const SNIPPET_BYTES: usize = 80;

/// Why a [`PrometheusClient`] cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    #[error("metricsProviders[].prometheus.url {url:?} is not usable: {reason}; give the server's base URL, such as http://prometheus.monitoring:9090")]
    Url { url: String, reason: String },
    #[error("metricsProviders[].prometheus.caFile {path}: cannot read it: {source}; mount the CA bundle at that path or fix caFile")]
    CaFileRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("metricsProviders[].prometheus.caFile {path}: {reason}; it must hold PEM certificates (-----BEGIN CERTIFICATE-----)")]
    CaFileInvalid { path: String, reason: String },
    #[error("the Prometheus auth token is not usable in an HTTP header (it holds control characters or non-ASCII bytes); store the bare token in the Secret's {AUTH_TOKEN_SECRET_KEY} key")]
    Token,
    #[error("cannot build the HTTP client for Prometheus at {url}: {reason}")]
    Client { url: String, reason: String },
}

/// A client for one Prometheus server.
#[derive(Debug, Clone)]
pub struct PrometheusClient {
    http: reqwest::Client,
    /// The base URL as configured, without a trailing slash (for messages).
    url: String,
    /// `{url}/api/v1/query`.
    query_url: reqwest::Url,
    node_label: String,
    timeout: Duration,
}

impl PrometheusClient {
    /// A client for `cfg.url`, sending `Authorization: Bearer <token>` when a token is given.
    /// With `caFile`, the server's certificate may also be signed by the CAs of that PEM file;
    /// with `insecureSkipVerify`, it is not checked at all.
    pub fn new(
        cfg: &PrometheusProvider,
        token: Option<String>,
    ) -> Result<PrometheusClient, PrometheusError> {
        let raw = cfg.url.trim();
        // Credentials in the URL are sent (basic auth), never shown.
        let shown = crate::policy::redact_url(raw);
        let bad = |reason: String| PrometheusError::Url {
            url: shown.clone(),
            reason,
        };
        let base = reqwest::Url::parse(raw).map_err(|e| bad(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(bad(format!(
                "the scheme {:?} is not http or https",
                base.scheme()
            )));
        }
        if base.host_str().is_none_or(str::is_empty) {
            return Err(bad("it names no host".into()));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(bad("it has a query or fragment".into()));
        }
        let query_url = reqwest::Url::parse(&format!("{}/api/v1/query", raw.trim_end_matches('/')))
            .map_err(|e| bad(e.to_string()))?;
        let url = shown.trim_end_matches('/').to_string();

        let timeout = Duration::from_secs(cfg.timeout_seconds().max(1).unsigned_abs());
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        if let Some(token) = token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            if base.scheme() == "http" {
                tracing::warn!(
                    url = %url,
                    "the Prometheus token (a Secret's, or the service account's) is sent in \
                     clear text over http://; use an https:// URL"
                );
            }
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| PrometheusError::Token)?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("descheduler/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .timeout(timeout)
            .connect_timeout(timeout)
            // A few queries per cycle, minutes apart: a pooled connection would mostly be one
            // the server or a proxy has closed meanwhile (a failed query, not a retry).
            .pool_max_idle_per_host(0)
            .use_rustls_tls();
        if let Some(path) = cfg.ca_file.as_deref().filter(|p| !p.is_empty()) {
            let pem = crate::input::read_regular_file(Path::new(path), crate::input::TLS_LIMIT)
                .map_err(|source| PrometheusError::CaFileRead {
                    path: path.to_string(),
                    source,
                })?;
            let invalid = |reason: String| PrometheusError::CaFileInvalid {
                path: path.to_string(),
                reason,
            };
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| invalid(error_chain(&e)))?;
            if certs.is_empty() {
                return Err(invalid("it holds no certificate".into()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if cfg.insecure_skip_verify {
            builder = builder.danger_accept_invalid_certs(true);
        }
        let http = builder.build().map_err(|e| PrometheusError::Client {
            url: url.clone(),
            reason: error_chain(&e),
        })?;
        Ok(PrometheusClient {
            http,
            url,
            query_url,
            node_label: cfg.node_label().to_string(),
            timeout,
        })
    }

    /// The server's base URL, as configured (no trailing slash), without credentials.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The label whose value names a series' node.
    pub fn node_label(&self) -> &str {
        &self.node_label
    }

    /// How long one query may take, connecting included.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs an instant query and maps its series to nodes or pods. Every failure is one line
    /// naming the URL and what to check.
    pub async fn query(
        &self,
        query: &str,
        target: QueryTarget,
    ) -> Result<NamedSamples<Sample>, String> {
        let mut url = self.query_url.clone();
        url.query_pairs_mut().append_pair("query", query);
        let response = self
            .http
            .get(url)
            .send()
            .await
            // reqwest's errors name the URL, credentials included: left out.
            .map_err(|e| self.request_error(&e.without_url()))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| self.request_error(&e.without_url()))?;
        if !status.is_success() {
            return Err(self.status_error(status, &body, query));
        }
        parse_response(&body, target, &self.node_label)
            .map_err(|e| format!("Prometheus at {}: query {query:?}: {e}", self.url))
    }

    fn request_error(&self, e: &reqwest::Error) -> String {
        let url = &self.url;
        let cause = root_cause(e);
        if e.is_timeout() || cause.to_ascii_lowercase().contains("timed out") {
            format!(
                "Prometheus at {url} did not answer within {}s (timeout); check that it is up and not \
                 overloaded, make the query cheaper, or raise metricsProviders[].prometheus.timeout",
                self.timeout.as_secs()
            )
        } else if e.is_connect() {
            format!(
                "cannot connect to Prometheus at {url}: {cause}; check metricsProviders[].prometheus.url \
                 and that Prometheus is running and reachable from the descheduler (DNS, network \
                 policies, TLS: caFile or insecureSkipVerify)"
            )
        } else if cause.contains("connection closed") || cause.contains("reset by peer") {
            format!(
                "Prometheus at {url} closed the connection without answering ({cause}); check that \
                 it is running (not restarting) and that no proxy between them drops the request"
            )
        } else if e.is_decode() || e.is_body() {
            format!(
                "reading the answer of Prometheus at {url} failed: {cause}; check that the url \
                 points at Prometheus itself and that no proxy cuts the connection"
            )
        } else {
            format!(
                "the request to Prometheus at {url} failed: {}; check metricsProviders[].prometheus.url \
                 and the network between the descheduler and Prometheus",
                error_chain(e)
            )
        }
    }

    fn status_error(&self, status: reqwest::StatusCode, body: &[u8], query: &str) -> String {
        let url = &self.url;
        let api_error = serde_json::from_slice::<RawResponse>(body)
            .ok()
            .filter(|r| r.status == "error")
            .map(|r| describe_api_error(&r));
        let said = match &api_error {
            Some(e) => format!(": {e}"),
            None if body.is_empty() => String::new(),
            None => format!("; the body starts with {}", snippet(body)),
        };
        let hint = match status.as_u16() {
            401 | 403 => "check the auth token: the Secret of authToken.secretReference (data key \
                 prometheusAuthToken) or, without it, the pod's service account token, and that it \
                 may query this Prometheus"
                .to_string(),
            400 | 422 => format!("check the query {query:?} (it must be valid PromQL giving one series per node or pod)"),
            404 => "check metricsProviders[].prometheus.url: it must be Prometheus' base URL \
                 (the API is under /api/v1), including any path prefix of a proxy"
                .to_string(),
            503 | 504 => "Prometheus is overloaded or the query took too long on the server; make \
                 the query cheaper or try again later"
                .to_string(),
            _ => "check metricsProviders[].prometheus.url and the Prometheus server's log".to_string(),
        };
        format!("Prometheus at {url} answered HTTP {status}{said}; {hint}")
    }
}

#[derive(Deserialize)]
struct RawResponse {
    status: String,
    #[serde(default)]
    data: Option<RawData>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct RawData {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(default)]
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    /// `[<unix seconds>, "<value>"]`.
    #[serde(default)]
    value: Option<(f64, String)>,
    /// A native histogram sample (no plain value).
    #[serde(default)]
    histogram: Option<serde_json::Value>,
}

fn describe_api_error(r: &RawResponse) -> String {
    let kind = r.error_type.as_deref().unwrap_or("error");
    let text = r.error.as_deref().unwrap_or("(no message)");
    one_line(&format!("{kind}: {text}"))
}

/// The series of a `/api/v1/query` answer that is a successful instant vector, or why the
/// answer is not one.
fn instant_vector(body: &[u8]) -> Result<Vec<RawSeries>, String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        format!(
            "the answer is not JSON ({e}); it starts with {}; check that the url points at \
             Prometheus' HTTP API, not a login page, a proxy's error page or a dashboard",
            snippet(body)
        )
    })?;
    let response: RawResponse = serde_json::from_value(value).map_err(|e| {
        format!(
            "the answer is JSON but not a Prometheus API response ({e}); it starts with {}; \
             check that the url points at Prometheus' HTTP API",
            snippet(body)
        )
    })?;
    match response.status.as_str() {
        "success" => {}
        "error" => {
            return Err(format!(
                "Prometheus answered status error: {}",
                describe_api_error(&response)
            ))
        }
        other => {
            return Err(format!(
                "the answer has status {other:?}, neither success nor error; check that the url \
                 points at Prometheus' HTTP API"
            ))
        }
    }
    let data = response
        .data
        .ok_or("the answer has status success but no data; check that the url points at Prometheus' HTTP API")?;
    let needed = "an instant vector is needed (one series per node or pod)";
    match data.result_type.as_str() {
        "vector" => {}
        "matrix" => {
            return Err(format!(
                "the query gives a range vector (matrix); {needed}: drop the range selector \
                 such as [5m], or wrap it in a function such as avg_over_time(...[5m]) or rate(...[5m])"
            ))
        }
        "scalar" | "string" => {
            return Err(format!(
                "the query gives a {}; {needed}, such as sum by (instance) (...)",
                data.result_type
            ))
        }
        other => return Err(format!("the query gives resultType {other:?}; {needed}")),
    }
    serde_json::from_value(data.result)
        .map_err(|e| format!("the vector's result is not a list of series ({e})"))
}

/// A series' value and time, checked: a finite number >= 0 at a time in Unix seconds.
fn series_sample(s: &RawSeries, name: &str) -> Result<Sample, String> {
    let (ts, text) = match &s.value {
        Some(v) => v,
        None if s.histogram.is_some() => {
            return Err(format!(
                "series {name} is a native histogram, not a number; reduce it to one number, \
                 such as histogram_quantile(0.9, ...) or histogram_sum(...)"
            ))
        }
        None => return Err(format!("series {name} has no value")),
    };
    let value = parse_value(text)
        .ok_or_else(|| format!("series {name} has the value {text:?}, not a number"))?;
    check_value(value, false).map_err(|e| {
        format!(
            "series {name} has the value {e}; every series must be a finite number ≥ 0: \
             guard divisions by zero and drop series without data (for example with `> 0` or \
             `unless`)"
        )
    })?;
    // Unix seconds, from 1970 to the end of year 9999 (what RFC 3339 writes).
    if !(0.0..=253_402_300_799.0).contains(ts) {
        return Err(format!(
            "series {name} has the timestamp {ts}, not a time in Unix seconds"
        ));
    }
    Ok(Sample {
        value,
        timestamp: ts.floor() as i64,
    })
}

/// What a series names: a node (by `node_label`) or a pod (namespace, name).
fn series_key(
    s: &RawSeries,
    name: &str,
    target: QueryTarget,
    node_label: &str,
) -> Result<(String, String), String> {
    Ok(match target {
        QueryTarget::Node => {
            let node = label(&s.metric, node_label).ok_or_else(|| {
                format!(
                    "series {name} has no label {node_label:?} naming its node; aggregate by \
                     it, such as `sum by ({node_label}) (...)`, or set \
                     metricsProviders[].prometheus.nodeLabel to the label that holds the node name"
                )
            })?;
            (String::new(), node.to_string())
        }
        QueryTarget::Pod => {
            let missing: Vec<&str> = ["namespace", "pod"]
                .into_iter()
                .filter(|l| label(&s.metric, l).is_none())
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "series {name} has no label {} naming its pod; aggregate by them, such as \
                     `sum by (namespace, pod) (...)`",
                    missing
                        .iter()
                        .map(|l| format!("{l:?}"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ));
            }
            let ns = label(&s.metric, "namespace").unwrap_or_default();
            let pod = label(&s.metric, "pod").unwrap_or_default();
            (ns.to_string(), pod.to_string())
        }
    })
}

/// Reads a `/api/v1/query` answer: an instant vector whose series are mapped to nodes (by
/// `node_label`) or pods (by the `namespace` and `pod` labels). Any unusable series makes the
/// whole answer an error naming it: a plugin must not act on half an answer.
pub fn parse_response(
    body: &[u8],
    target: QueryTarget,
    node_label: &str,
) -> Result<NamedSamples<Sample>, String> {
    let series = instant_vector(body)?;
    let mut out = NamedSamples::default();
    // Which series named each node or pod first (for the duplicate error).
    let mut seen: BTreeMap<(String, String), String> = BTreeMap::new();
    for s in &series {
        let name = describe_series(&s.metric);
        let sample = series_sample(s, &name)?;
        let key = series_key(s, &name, target, node_label)?;
        match seen.entry(key.clone()) {
            Entry::Occupied(first) => {
                let (what, by) = match target {
                    QueryTarget::Node => (format!("node {:?}", key.1), node_label.to_string()),
                    QueryTarget::Pod => (
                        format!("pod {}/{}", key.0, key.1),
                        "namespace, pod".to_string(),
                    ),
                };
                return Err(format!(
                    "two series for {what}: {} and {name}; the query must give one series per \
                     node or pod: aggregate, such as `sum by ({by}) (...)`",
                    first.get()
                ));
            }
            Entry::Vacant(slot) => {
                slot.insert(name);
            }
        }
        match target {
            QueryTarget::Node => out.nodes.push((key.1, sample)),
            QueryTarget::Pod => out.pods.push((key, sample)),
        }
    }
    Ok(out)
}

/// A label's value, None when absent or empty (Prometheus treats both alike).
fn label<'a>(metric: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    metric
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// Prometheus' float text: Go's strconv formats, with `NaN`, `+Inf` and `-Inf`.
fn parse_value(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => text.trim().parse::<f64>().ok(),
    }
}

/// `name{label="value", ...}` as PromQL prints a series (shortened when long).
fn describe_series(metric: &BTreeMap<String, String>) -> String {
    let mut out = metric.get("__name__").cloned().unwrap_or_default();
    out.push('{');
    let mut first = true;
    for (k, v) in metric.iter().filter(|(k, _)| k.as_str() != "__name__") {
        if !first {
            out.push_str(", ");
        }
        first = false;
        let _ = write!(out, "{k}={v:?}");
    }
    out.push('}');
    if out.chars().count() > 200 {
        out = out.chars().take(197).collect::<String>() + "...";
    }
    out
}

/// The first bytes of a body, quoted on one line.
fn snippet(body: &[u8]) -> String {
    let cut = &body[..body.len().min(SNIPPET_BYTES)];
    let text = String::from_utf8_lossy(cut);
    let more = if body.len() > SNIPPET_BYTES {
        "..."
    } else {
        ""
    };
    format!("{text:?}{more}")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An error and its causes, `a: b: c`, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    one_line(&out)
}

/// The innermost cause of an error (such as `Connection refused (os error 111)`).
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    one_line(&last)
}

/// The bearer token for Prometheus, as upstream finds it:
/// - `authToken.secretReference` set: the Secret's data key `prometheusAuthToken` (read with
///   `kube`); a missing Secret, key or empty token is an error naming the Secret and key.
///   `authToken` without a `secretReference` is an error too (upstream refuses to start).
/// - otherwise, when running in a pod (`KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`
///   set, as client-go's `rest.InClusterConfig` decides): the service account token file, an
///   error if it cannot be read. Outside a cluster: no token.
///
/// Beyond upstream: surrounding whitespace (such as a trailing newline of a token stored from a
/// file) is trimmed; an empty token means none.
pub async fn resolve_token(
    cfg: &PrometheusProvider,
    kube: Option<&kube::Client>,
) -> Result<Option<String>, String> {
    let Some(auth) = &cfg.auth_token else {
        let in_cluster = ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"]
            .iter()
            .all(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
        return service_account_token(in_cluster, Path::new(SERVICE_ACCOUNT_TOKEN_FILE));
    };
    let Some(r) = &auth.secret_reference else {
        return Err(format!(
            "metricsProviders[].prometheus.authToken is set without a secretReference; name the \
             Secret (namespace and name) holding the token in its data key {AUTH_TOKEN_SECRET_KEY}, \
             or remove authToken to use the service account token"
        ));
    };
    if r.namespace.is_empty() || r.name.is_empty() {
        return Err(format!(
            "metricsProviders[].prometheus.authToken.secretReference needs both namespace and name \
             of the Secret holding the token (data key {AUTH_TOKEN_SECRET_KEY})"
        ));
    }
    let secret = format!("Secret {}/{}", r.namespace, r.name);
    let Some(kube) = kube else {
        return Err(format!(
            "reading the Prometheus token from {secret} needs a Kubernetes client; run against a \
             cluster (--kubeconfig or in a pod)"
        ));
    };
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(kube.clone(), &r.namespace);
    let found = api.get_opt(&r.name).await.map_err(|e| match &e {
        kube::Error::Api(status) if status.code == 401 || status.code == 403 => format!(
            "reading the Prometheus token from {secret} was refused (HTTP {}: {}); let the \
             descheduler's service account get secrets in namespace {} (a Role and RoleBinding)",
            status.code,
            one_line(&status.message),
            r.namespace
        ),
        _ => format!(
            "reading the Prometheus token from {secret} failed: {}; check that the API server is reachable",
            error_chain(&e)
        ),
    })?;
    let Some(found) = found else {
        return Err(format!(
            "{secret} (metricsProviders[].prometheus.authToken.secretReference) does not exist; \
             create it with the Prometheus token in its data key {AUTH_TOKEN_SECRET_KEY}"
        ));
    };
    let bytes = found
        .data
        .as_ref()
        .and_then(|d| d.get(AUTH_TOKEN_SECRET_KEY))
        .map(|b| b.0.as_slice())
        .unwrap_or_default();
    let token = std::str::from_utf8(bytes).map_err(|_| {
        format!(
            "{secret}: data key {AUTH_TOKEN_SECRET_KEY} is not UTF-8 text; store the bare token"
        )
    })?;
    let token = token.trim();
    if token.is_empty() {
        return Err(format!(
            "{secret} has no data key {AUTH_TOKEN_SECRET_KEY}, or it is empty; put the Prometheus \
             bearer token there"
        ));
    }
    Ok(Some(token.to_string()))
}

/// The service account token when running in a pod; None outside a cluster.
fn service_account_token(in_cluster: bool, path: &Path) -> Result<Option<String>, String> {
    if !in_cluster {
        return Ok(None);
    }
    let text =
        crate::input::read_regular_utf8_file(path, crate::input::TLS_LIMIT).map_err(|e| {
            format!(
            "running in a pod (KUBERNETES_SERVICE_HOST is set), but the service account token {} \
             cannot be read: {e}; mount it (automountServiceAccountToken: true) or name a Secret \
             in metricsProviders[].prometheus.authToken.secretReference",
            path.display()
        )
        })?;
    let token = text.trim();
    Ok((!token.is_empty()).then(|| token.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(body: &str) -> Result<NamedSamples<Sample>, String> {
        parse_response(body.as_bytes(), QueryTarget::Node, "instance")
    }

    fn pod(body: &str) -> Result<NamedSamples<Sample>, String> {
        parse_response(body.as_bytes(), QueryTarget::Pod, "instance")
    }

    fn vector(series: &str) -> String {
        format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{series}]}}}}"#)
    }

    fn provider(url: &str) -> PrometheusProvider {
        PrometheusProvider {
            url: url.to_string(),
            auth_token: None,
            node_label: None,
            ca_file: None,
            insecure_skip_verify: false,
            timeout: None,
        }
    }

    #[test]
    fn node_vector_maps_by_the_node_label() {
        let body = vector(
            r#"{"metric":{"instance":"a"},"value":[1767225600.5,"0.25"]},
               {"metric":{"instance":"b","job":"x"},"value":[1767225601,"3"]}"#,
        );
        let got = node(&body).unwrap();
        assert!(got.pods.is_empty());
        assert_eq!(
            got.nodes,
            vec![
                (
                    "a".to_string(),
                    Sample {
                        value: 0.25,
                        timestamp: 1767225600
                    }
                ),
                (
                    "b".to_string(),
                    Sample {
                        value: 3.0,
                        timestamp: 1767225601
                    }
                ),
            ]
        );
        let custom =
            vector(r#"{"metric":{"node":"n1","instance":"10.0.0.1:9100"},"value":[5,"1e-3"]}"#);
        let got = parse_response(custom.as_bytes(), QueryTarget::Node, "node").unwrap();
        assert_eq!(got.nodes[0].0, "n1");
        assert_eq!(got.nodes[0].1.value, 0.001);
        assert!(node(&vector("")).unwrap().nodes.is_empty());
        // A timestamp that is not a time is refused (-1e300 looked fresh).
        for ts in ["-1e300", "-1", "1e300"] {
            let body = vector(&format!(
                r#"{{"metric":{{"instance":"a"}},"value":[{ts},"1"]}}"#
            ));
            let err = node(&body).unwrap_err();
            assert!(err.contains("timestamp"), "{err}");
        }
    }

    #[test]
    fn pod_vector_maps_by_namespace_and_pod() {
        let body = vector(
            r#"{"metric":{"namespace":"ns","pod":"p1","instance":"a"},"value":[10,"1.5"]},
               {"metric":{"namespace":"other","pod":"p1"},"value":[10,"0"]}"#,
        );
        let got = pod(&body).unwrap();
        assert!(got.nodes.is_empty());
        assert_eq!(got.pods[0].0, ("ns".to_string(), "p1".to_string()));
        assert_eq!(got.pods[0].1.value, 1.5);
        assert_eq!(got.pods[1].0, ("other".to_string(), "p1".to_string()));
        assert_eq!(got.pods[1].1.timestamp, 10);
    }

    #[test]
    fn only_an_instant_vector_is_accepted() {
        let matrix = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1,"1"],[2,"2"]]}]}}"#;
        let e = node(matrix).unwrap_err();
        assert!(e.contains("matrix") && e.contains("instant vector"), "{e}");
        let scalar = r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#;
        let e = node(scalar).unwrap_err();
        assert!(e.contains("scalar") && e.contains("instant vector"), "{e}");
        let string = r#"{"status":"success","data":{"resultType":"string","result":[1,"x"]}}"#;
        let e = pod(string).unwrap_err();
        assert!(e.contains("string") && e.contains("instant vector"), "{e}");
    }

    #[test]
    fn html_and_other_non_api_answers_are_refused() {
        let e = node("<!DOCTYPE html>\n<html><title>Sign in</title></html>").unwrap_err();
        assert!(
            e.contains("not JSON") && e.contains("<!DOCTYPE html>"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        let e = node(r#"{"hello":"world"}"#).unwrap_err();
        assert!(e.contains("not a Prometheus API response"), "{e}");
        let e = node("").unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        let e = node(r#"{"status":"success"}"#).unwrap_err();
        assert!(e.contains("no data"), "{e}");
    }

    #[test]
    fn nan_infinite_and_negative_values_refuse_the_whole_answer() {
        for (text, word) in [
            ("NaN", "NaN"),
            ("+Inf", "not finite"),
            ("-Inf", "not finite"),
            ("-0.5", "negative"),
        ] {
            let body = vector(&format!(
                r#"{{"metric":{{"instance":"good"}},"value":[1,"1"]}},
                   {{"metric":{{"__name__":"load","instance":"bad"}},"value":[1,"{text}"]}}"#
            ));
            let e = node(&body).unwrap_err();
            assert!(e.contains(word), "{text}: {e}");
            assert!(e.contains(r#"load{instance="bad"}"#), "{text}: {e}");
        }
        let e = node(&vector(r#"{"metric":{"instance":"a"},"value":[1,"lots"]}"#)).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = node(&vector(
            r#"{"metric":{"instance":"a"},"histogram":[1,{"count":"2"}]}"#,
        ))
        .unwrap_err();
        assert!(e.contains("native histogram"), "{e}");
    }

    #[test]
    fn series_without_the_label_are_refused_with_the_fix() {
        let e = node(&vector(r#"{"metric":{"job":"node"},"value":[1,"1"]}"#)).unwrap_err();
        assert!(e.contains(r#""instance""#), "{e}");
        assert!(e.contains("sum by (instance)"), "{e}");
        assert!(e.contains("nodeLabel"), "{e}");
        let e = parse_response(
            vector(r#"{"metric":{"instance":"a"},"value":[1,"1"]}"#).as_bytes(),
            QueryTarget::Node,
            "kubernetes_node",
        )
        .unwrap_err();
        assert!(e.contains("sum by (kubernetes_node)"), "{e}");
        let e = pod(&vector(r#"{"metric":{"pod":"p"},"value":[1,"1"]}"#)).unwrap_err();
        assert!(
            e.contains(r#""namespace""#) && e.contains("sum by (namespace, pod)"),
            "{e}"
        );
        let e = pod(&vector(
            r#"{"metric":{"namespace":"ns","pod":""},"value":[1,"1"]}"#,
        ))
        .unwrap_err();
        assert!(e.contains(r#""pod""#), "{e}");
    }

    #[test]
    fn two_series_for_one_node_or_pod_are_refused() {
        let body = vector(
            r#"{"metric":{"instance":"a","cpu":"0"},"value":[1,"1"]},
               {"metric":{"instance":"a","cpu":"1"},"value":[1,"2"]}"#,
        );
        let e = node(&body).unwrap_err();
        assert!(e.contains(r#"two series for node "a""#), "{e}");
        assert!(e.contains(r#"cpu="0""#) && e.contains(r#"cpu="1""#), "{e}");
        assert!(e.contains("sum by (instance)"), "{e}");
        let body = vector(
            r#"{"metric":{"namespace":"ns","pod":"p","container":"a"},"value":[1,"1"]},
               {"metric":{"namespace":"ns","pod":"p","container":"b"},"value":[1,"2"]}"#,
        );
        let e = pod(&body).unwrap_err();
        assert!(e.contains("two series for pod ns/p"), "{e}");
        assert!(e.contains("sum by (namespace, pod)"), "{e}");
    }

    #[test]
    fn status_error_is_reported_with_prometheus_message() {
        let body = r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected\nend of input"}"#;
        let e = node(body).unwrap_err();
        assert!(e.contains("status error"), "{e}");
        assert!(e.contains("bad_data: 1:5: parse error"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        let e = node(r#"{"status":"maybe"}"#).unwrap_err();
        assert!(e.contains("maybe"), "{e}");
    }

    #[test]
    fn client_construction_checks_url_and_ca_file() {
        let e = PrometheusClient::new(&provider("prometheus:9090"), None).unwrap_err();
        assert!(matches!(e, PrometheusError::Url { .. }), "{e}");
        let e = PrometheusClient::new(&provider("ftp://prometheus"), None).unwrap_err();
        assert!(e.to_string().contains("not http or https"), "{e}");
        // Credentials in the URL are never shown.
        let e = PrometheusClient::new(&provider("ftp://user:s3cret@host"), None).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let e = PrometheusClient::new(&provider("http://user:s3cret@host/?q"), None).unwrap_err();
        assert!(
            !e.to_string().contains("s3cret") && e.to_string().contains("***@host"),
            "{e}"
        );

        let e = PrometheusClient::new(&provider("not a url"), None).unwrap_err();
        assert!(e.to_string().contains("\"not a url\""), "{e}");

        let mut cfg = provider("https://prometheus.example:9090/prom/");
        cfg.ca_file = Some("/nonexistent/ca.pem".into());
        let e = PrometheusClient::new(&cfg, None).unwrap_err();
        assert!(matches!(e, PrometheusError::CaFileRead { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");

        // A device is refused, not read until memory runs out.
        cfg.ca_file = Some("/dev/zero".into());
        let e = PrometheusClient::new(&cfg, None).unwrap_err();
        assert!(matches!(e, PrometheusError::CaFileRead { .. }), "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        cfg.ca_file = Some(empty.display().to_string());
        let e = PrometheusClient::new(&cfg, None).unwrap_err();
        assert!(matches!(e, PrometheusError::CaFileInvalid { .. }), "{e}");
        assert!(e.to_string().contains("empty.pem"), "{e}");

        cfg.ca_file = None;
        cfg.insecure_skip_verify = true;
        cfg.timeout = Some("3s".into());
        let c = PrometheusClient::new(&cfg, Some("tok\n".into())).unwrap();
        assert_eq!(c.url(), "https://prometheus.example:9090/prom");
        assert_eq!(
            c.query_url.as_str(),
            "https://prometheus.example:9090/prom/api/v1/query"
        );
        assert_eq!(c.timeout(), Duration::from_secs(3));
        assert_eq!(c.node_label(), "instance");

        let e = PrometheusClient::new(&cfg, Some("a\nb".into())).unwrap_err();
        assert!(matches!(e, PrometheusError::Token), "{e}");
    }

    #[test]
    fn service_account_token_only_in_a_pod() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("token");
        assert_eq!(service_account_token(false, &missing), Ok(None));
        let e = service_account_token(true, &missing).unwrap_err();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        std::fs::write(&missing, "eyJhbGciOi.abc\n").unwrap();
        assert_eq!(
            service_account_token(true, &missing),
            Ok(Some("eyJhbGciOi.abc".to_string()))
        );
        assert_eq!(service_account_token(false, &missing), Ok(None));
    }

    #[tokio::test]
    async fn auth_token_without_a_usable_secret_reference_is_an_error() {
        use crate::policy::{AuthToken, SecretReference};
        let mut cfg = provider("http://127.0.0.1:9090");
        cfg.auth_token = Some(AuthToken {
            secret_reference: None,
        });
        let e = resolve_token(&cfg, None).await.unwrap_err();
        assert!(e.contains("secretReference"), "{e}");
        cfg.auth_token = Some(AuthToken {
            secret_reference: Some(SecretReference {
                namespace: "monitoring".into(),
                name: "prom-token".into(),
            }),
        });
        let e = resolve_token(&cfg, None).await.unwrap_err();
        assert!(e.contains("Secret monitoring/prom-token"), "{e}");
    }

    /// A URL's credentials go to the server as basic auth, and show nowhere: not in the URL
    /// the client reports, not in the error of a failed query (reqwest's errors name the URL).
    #[tokio::test]
    async fn credentials_in_the_url_are_redacted() {
        assert_eq!(
            crate::policy::redact_url("http://user:s3cret@prom:9090/x@y"),
            "http://***@prom:9090/x@y"
        );
        assert_eq!(
            crate::policy::redact_url("http://prom:9090"),
            "http://prom:9090"
        );
        // A port nothing listens on: the query fails to connect.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = PrometheusClient::new(
            &provider(&format!("http://user:s3cret@127.0.0.1:{port}/")),
            Some("token".into()),
        )
        .unwrap();
        assert_eq!(c.url(), format!("http://***@127.0.0.1:{port}"));
        let e = c.query("up", QueryTarget::Node).await.unwrap_err();
        assert!(!e.contains("s3cret") && e.contains("***@127.0.0.1"), "{e}");
    }
}
