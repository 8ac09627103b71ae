//! Why reading a resource from the API server failed, as a type the sources decide on: a
//! refusal (403) names the RBAC rule to add and fails a cycle at once; a resource not served
//! (404) is none of an optional kind, or the next version to try; a transient failure is
//! tried again; an answer that cannot be decoded is listed again. Nothing is decided by
//! reading an error's text.

use super::client;
use crate::snapshot::decode::SnapshotError;
use crate::snapshot::store::Resource;
use crate::snapshot::GangKind;

/// Why reading one resource failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadFailure {
    /// 403: the descheduler may not read `resource`; its ClusterRole needs `rule`.
    #[error("listing {} (forbidden: give the descheduler's ClusterRole {rule}, as in {}) failed: {}", .resource.name(), rbac_source(*.resource), client::describe(.source))]
    Forbidden {
        resource: Resource,
        rule: &'static str,
        #[source]
        source: kube::Error,
    },
    /// 404: the resource is not served (a CRD not installed, an API version not enabled), or
    /// no longer.
    #[error("listing {} failed: {}", .resource.name(), client::describe(.source))]
    NotServed {
        resource: Resource,
        #[source]
        source: kube::Error,
    },
    /// Asking again later may succeed: the server cannot be reached or the connection was
    /// cut, it answered that it cannot serve now (429, 500, 502, 503, 504), or it did not
    /// answer within the request's deadline (`timed_out`).
    #[error("listing {} failed: {}", .resource.name(), client::describe(.source))]
    Transient {
        resource: Resource,
        timed_out: bool,
        #[source]
        source: kube::Error,
    },
    /// Any other answer (credentials refused, a request the server will not take): asking
    /// again the same way will not help.
    #[error("listing {} failed: {}", .resource.name(), client::describe(.source))]
    Refused {
        resource: Resource,
        #[source]
        source: kube::Error,
    },
    /// The answer could not be read.
    #[error("the cluster state could not be decoded: {source}")]
    Decode {
        resource: Resource,
        #[source]
        source: SnapshotError,
    },
}

/// The HTTP status of an API error (its Status's code); None for failures below HTTP.
pub fn status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

impl ReadFailure {
    /// Classifies a request's failure on `resource`.
    pub fn of(resource: Resource, source: kube::Error) -> ReadFailure {
        if client::is_timeout(&source) {
            return ReadFailure::Transient {
                resource,
                timed_out: true,
                source,
            };
        }
        match &source {
            kube::Error::Api(s) if s.code == 403 => ReadFailure::Forbidden {
                resource,
                rule: rbac_rule(resource),
                source,
            },
            kube::Error::Api(s) if s.code == 404 => ReadFailure::NotServed { resource, source },
            kube::Error::Api(s) if matches!(s.code, 429 | 500 | 502 | 503 | 504) => {
                ReadFailure::Transient {
                    resource,
                    timed_out: false,
                    source,
                }
            }
            // The connection: refused, reset, cut while reading.
            kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
                ReadFailure::Transient {
                    resource,
                    timed_out: false,
                    source,
                }
            }
            // Credentials, configuration, requests that cannot be built.
            _ => ReadFailure::Refused { resource, source },
        }
    }

    /// An answer of `resource` that could not be read.
    pub fn decode(resource: Resource, source: SnapshotError) -> ReadFailure {
        ReadFailure::Decode { resource, source }
    }

    /// The resource that could not be read.
    pub fn resource(&self) -> Resource {
        match self {
            ReadFailure::Forbidden { resource, .. }
            | ReadFailure::NotServed { resource, .. }
            | ReadFailure::Transient { resource, .. }
            | ReadFailure::Refused { resource, .. }
            | ReadFailure::Decode { resource, .. } => *resource,
        }
    }

    /// Whether asking again in a moment may succeed: a server that did not answer in time
    /// is not asked again at once (each try would wait as long again).
    pub fn retry_soon(&self) -> bool {
        matches!(
            self,
            ReadFailure::Transient {
                timed_out: false,
                ..
            }
        )
    }

    /// The wait the API server asked for before the next request, when it said one: a 429
    /// (its priority and fairness, a rate limit) or 503 with `Retry-After` (or its Status's
    /// `details.retryAfterSeconds`). Asking sooner only gets another refusal.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        let ReadFailure::Transient {
            source: kube::Error::Api(s),
            ..
        } = self
        else {
            return None;
        };
        let seconds = s.details.as_ref()?.retry_after_seconds;
        (seconds > 0 && matches!(s.code, 429 | 503))
            .then(|| std::time::Duration::from_secs(u64::from(seconds)))
    }

    /// The failure itself, without the resource: the API's answer, the connection's error
    /// or what could not be decoded.
    pub fn cause(&self) -> String {
        match self {
            ReadFailure::Forbidden { source, .. }
            | ReadFailure::NotServed { source, .. }
            | ReadFailure::Transient { source, .. }
            | ReadFailure::Refused { source, .. } => client::describe(source),
            ReadFailure::Decode { source, .. } => source.to_string(),
        }
    }

    /// What to tell the operator when the descheduler may not read the resource.
    pub fn fix(&self) -> Option<String> {
        match self {
            ReadFailure::Forbidden { rule, resource, .. } => Some(format!(
                "forbidden: give the descheduler's ClusterRole {rule}, as in {}",
                rbac_source(*resource)
            )),
            _ => None,
        }
    }
}

/// Where the manifests grant the rule to read `resource`: the base ClusterRole, or, for the
/// workloads only a surge reads, the surge component (the chart's `surge.enabled`).
pub fn rbac_source(resource: Resource) -> &'static str {
    if resource.is_workload() {
        "manifests/components/surge (the chart's value surge.enabled), which a profile that moves pods by surge needs"
    } else {
        "manifests/base/clusterrole.yaml"
    }
}

/// The RBAC rule the descheduler's ClusterRole needs to read `resource`.
pub fn rbac_rule(resource: Resource) -> &'static str {
    match resource {
        Resource::Nodes => "get, list and watch on nodes",
        Resource::Pods => "get, list and watch on pods",
        Resource::PodDisruptionBudgets => "get, list and watch on poddisruptionbudgets.policy",
        Resource::Namespaces => "get, list and watch on namespaces",
        Resource::PriorityClasses => "get, list and watch on priorityclasses.scheduling.k8s.io",
        Resource::PodGroups(GangKind::SchedulerPlugins) => "the rule {apiGroups: [scheduling.x-k8s.io], resources: [podgroups], verbs: [get, list, watch]}",
        Resource::PodGroups(GangKind::Volcano) => "the rule {apiGroups: [scheduling.volcano.sh], resources: [podgroups], verbs: [get, list, watch]}",
        Resource::PodGroups(GangKind::Kubernetes) => "the rule {apiGroups: [scheduling.k8s.io], resources: [podgroups], verbs: [get, list, watch]}",
        Resource::Deployments => "the rule {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch]}",
        Resource::HorizontalPodAutoscalers => "the rule {apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [get, list, watch]}",
        Resource::ResourceQuotas => "the rule {apiGroups: [\"\"], resources: [resourcequotas], verbs: [get, list, watch]}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn answers_are_classified_by_their_status() {
        let of = |code| ReadFailure::of(Resource::Pods, api(code, "no"));
        assert!(matches!(of(403), ReadFailure::Forbidden { .. }));
        assert!(matches!(of(404), ReadFailure::NotServed { .. }));
        for code in [429, 500, 502, 503, 504] {
            assert!(of(code).retry_soon(), "{code}");
        }
        for code in [400, 401, 410, 422] {
            let f = of(code);
            assert!(matches!(f, ReadFailure::Refused { .. }), "{code}: {f:?}");
            assert!(!f.retry_soon());
        }
    }

    #[test]
    fn a_refusal_names_the_rule_to_add_in_the_message_users_see() {
        let f = ReadFailure::of(
            Resource::Pods,
            api(403, "pods is forbidden: User \"x\" cannot list"),
        );
        let said = f.to_string();
        assert!(
            said.starts_with("listing pods (forbidden: give the descheduler's ClusterRole get, list and watch on pods, as in manifests/base/clusterrole.yaml) failed: "),
            "{said}"
        );
        assert!(
            said.contains("pods is forbidden: User \"x\" cannot list"),
            "{said}"
        );
        let f = ReadFailure::of(
            Resource::PodGroups(GangKind::Volcano),
            api(403, "forbidden"),
        );
        assert_eq!(
            f.fix().unwrap(),
            "forbidden: give the descheduler's ClusterRole the rule {apiGroups: [scheduling.volcano.sh], resources: [podgroups], verbs: [get, list, watch]}, as in manifests/base/clusterrole.yaml"
        );
        let f = ReadFailure::of(Resource::Deployments, api(403, "forbidden"));
        assert_eq!(
            f.fix().unwrap(),
            "forbidden: give the descheduler's ClusterRole the rule {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch]}, as in manifests/components/surge (the chart's value surge.enabled), which a profile that moves pods by surge needs"
        );
        assert!(f.to_string().starts_with("listing deployments.apps (forbidden: give the descheduler's ClusterRole the rule {apiGroups: [apps], resources: [deployments]"), "{f}");
        let other = ReadFailure::of(Resource::Nodes, api(500, "etcd is down"));
        let said = other.to_string();
        assert!(said.starts_with("listing nodes failed: "), "{said}");
        assert!(said.contains("etcd is down"), "{said}");
        assert_eq!(other.resource(), Resource::Nodes);
        assert!(other.fix().is_none());
    }
}
