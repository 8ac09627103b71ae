//! The policy as the manifests install it: a ConfigMap holding `policy.yaml` (the kubectl
//! plugin's default when no policy file is given).

use super::LiveError;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

/// The ConfigMap the manifests (manifests/base) install the policy in.
pub const DEFAULT_NAMESPACE: &str = "kube-system";
pub const DEFAULT_NAME: &str = "descheduler-policy";
/// The key of the policy in the ConfigMap (the manifests' and upstream's chart's).
pub const KEY: &str = "policy.yaml";

/// Where a policy was read from, for errors and logs: `ConfigMap <ns>/<name> key policy.yaml`.
pub fn describe(namespace: &str, name: &str) -> String {
    format!("ConfigMap {namespace}/{name} key {KEY}")
}

/// The text of the policy in ConfigMap `namespace/name`.
pub async fn read(client: &kube::Client, namespace: &str, name: &str) -> Result<String, LiveError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let map = match api.get_opt(name).await {
        Ok(Some(map)) => map,
        Ok(None) => {
            return Err(LiveError::Unreadable(format!(
                "ConfigMap {namespace}/{name} not found; install the manifests (kubectl apply \
                 -k manifests/overlays/deployment), or name the policy with \
                 --policy-configmap NAMESPACE/NAME or --policy-config-file FILE"
            )))
        }
        Err(e) => {
            return Err(LiveError::Unreadable(format!(
                "reading ConfigMap {namespace}/{name}: {}; check the kubeconfig's context \
                 (kubectl config current-context) and that it may get configmaps there",
                super::client::describe(&e)
            )))
        }
    };
    let data = map.data.unwrap_or_default();
    data.get(KEY).cloned().ok_or_else(|| {
        let keys: Vec<&str> = data.keys().map(String::as_str).collect();
        LiveError::Unreadable(format!(
            "ConfigMap {namespace}/{name} has no key {KEY} (it has: {}); put the \
             DeschedulerPolicy under data.{KEY}",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        ))
    })
}
