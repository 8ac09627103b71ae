//! The workload objects a surge (make before break) reads: Deployments, the
//! HorizontalPodAutoscalers that may target them and the namespaces' ResourceQuotas.
//!
//! They are read only when a profile moves pods by surge (DefaultEvictor's `moveMode`); a
//! snapshot without them has none, and a surge is then refused for want of its Deployment.

use super::{Pod, Resources};

/// The annotation a surge in flight writes on its Deployment before the first scale: the
/// original replicas, the victim's UID and a deadline (see [`SurgeMark`]). A restarted
/// descheduler (or the next leader) finds it and completes or rolls back the surge; no
/// other descheduler surges a Deployment that carries it.
pub const SURGE_IN_FLIGHT_ANNOTATION: &str = "descheduler.alpha.kubernetes.io/surge-in-flight";
/// The ReplicaSet controller deletes the pods with the lowest cost first on a scale-down.
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";
/// The label the Deployment controller puts on its ReplicaSets' pods; their ReplicaSet is
/// named `<deployment>-<hash>`.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// A Deployment, as far as a surge reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    pub namespace: Box<str>,
    pub name: Box<str>,
    pub uid: Box<str>,
    /// `spec.replicas` (the API server defaults it to 1).
    pub replicas: i32,
    /// `spec.paused`.
    pub paused: bool,
    /// `metadata.generation` and `status.observedGeneration`: the controller has not seen
    /// the latest spec while they differ.
    pub generation: i64,
    pub observed_generation: i64,
    /// `status.replicas`, `status.updatedReplicas`, `status.availableReplicas`.
    pub status_replicas: i32,
    pub updated_replicas: i32,
    pub available_replicas: i32,
    /// The value of [`SURGE_IN_FLIGHT_ANNOTATION`], when set.
    pub surge_in_flight: Option<Box<str>>,
}

impl Deployment {
    /// `ns/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Why the Deployment is in the middle of a rollout, if it is: the controller has not
    /// observed its latest spec, or not every replica runs the current template, or old
    /// replicas are still there, or not every replica is available.
    pub fn rolling_out(&self) -> Option<String> {
        if self.observed_generation < self.generation {
            return Some(format!(
                "its controller has not yet observed generation {} (observed {})",
                self.generation, self.observed_generation
            ));
        }
        if self.updated_replicas < self.replicas {
            return Some(format!(
                "{} of {} replicas run the current template",
                self.updated_replicas, self.replicas
            ));
        }
        if self.status_replicas > self.replicas {
            return Some(format!(
                "{} replicas exist for {} wanted (old ones still terminating)",
                self.status_replicas, self.replicas
            ));
        }
        if self.available_replicas < self.replicas {
            return Some(format!(
                "{} of {} replicas are available",
                self.available_replicas, self.replicas
            ));
        }
        None
    }
}

/// A HorizontalPodAutoscaler's target (`spec.scaleTargetRef`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autoscaler {
    pub namespace: Box<str>,
    pub name: Box<str>,
    /// `scaleTargetRef.kind` (`Deployment`, ...).
    pub target_kind: Box<str>,
    pub target_name: Box<str>,
}

/// A ResourceQuota's `status.hard` and `status.used`, by the quota's own resource names
/// (`pods`, `requests.cpu`, `cpu`, `limits.memory`, `count/pods`, ...), each in the unit the
/// planner compares (milli for the CPU names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceQuota {
    pub namespace: Box<str>,
    pub name: Box<str>,
    pub hard: Vec<(Box<str>, i64)>,
    pub used: Vec<(Box<str>, i64)>,
}

impl ResourceQuota {
    /// Why one more pod with `pod`'s requests would not fit in the quota, if it would not.
    /// Counted: `pods` and `count/pods`, `cpu` / `requests.cpu`, `memory` /
    /// `requests.memory`, `requests.<resource>` of any other resource, and the `limits.*`
    /// names at least by the pod's requests (the model holds no limits; a limit is never below
    /// its request, so a pod that fails this check fails the quota's). A name the quota
    /// tracks but the pod does not use takes nothing.
    pub fn refuses(&self, pod: &Pod) -> Option<String> {
        for (name, hard) in &self.hard {
            let need = pod_need(&pod.requests, name);
            if need == 0 {
                continue;
            }
            let used = self
                .used
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, v)| *v);
            if used.saturating_add(need) > *hard {
                return Some(format!(
                    "ResourceQuota {}/{} has no room for one more pod: {name} used {used} of {hard}, the pod needs {need}",
                    self.namespace, self.name
                ));
            }
        }
        None
    }
}

/// What one more pod with `requests` takes of a quota's resource `name`.
fn pod_need(requests: &Resources, name: &str) -> i64 {
    match name {
        "pods" | "count/pods" => 1,
        _ => {
            let resource = name
                .strip_prefix("requests.")
                .or_else(|| name.strip_prefix("limits."))
                .unwrap_or(name);
            if name.contains('/') && !name.starts_with("requests.") && !name.starts_with("limits.")
            {
                // `count/<object>` of other objects, or an extended resource only counted
                // under `requests.`: a pod takes none of them.
                return 0;
            }
            requests.get(resource)
        }
    }
}

/// The workload objects of a snapshot, each list sorted by namespace, then name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workloads {
    pub deployments: Vec<Deployment>,
    pub autoscalers: Vec<Autoscaler>,
    pub quotas: Vec<ResourceQuota>,
}

impl Workloads {
    /// Sorts each list into its canonical order, one object per name.
    pub fn sort(&mut self) {
        self.deployments
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.deployments
            .dedup_by(|a, b| a.namespace == b.namespace && a.name == b.name);
        self.autoscalers
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.autoscalers
            .dedup_by(|a, b| a.namespace == b.namespace && a.name == b.name);
        self.quotas
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.quotas
            .dedup_by(|a, b| a.namespace == b.namespace && a.name == b.name);
    }

    /// A Deployment by namespace and name.
    pub fn deployment(&self, namespace: &str, name: &str) -> Option<&Deployment> {
        self.deployments
            .binary_search_by(|d| (&*d.namespace, &*d.name).cmp(&(namespace, name)))
            .ok()
            .map(|i| &self.deployments[i])
    }

    /// The Deployment whose ReplicaSet controls `pod`: its controller owner is a ReplicaSet
    /// named `<deployment>-<pod-template-hash>` (the Deployment controller's naming) and the
    /// snapshot holds that Deployment.
    pub fn deployment_of(&self, pod: &Pod) -> Option<&Deployment> {
        let owner = pod
            .owners
            .iter()
            .find(|o| o.controller && o.kind == "ReplicaSet")?;
        let hash = pod.labels.get(POD_TEMPLATE_HASH_LABEL)?;
        let name = owner.name.strip_suffix(hash)?.strip_suffix('-')?;
        self.deployment(&pod.namespace, name)
    }

    /// The autoscalers that target the Deployment.
    pub fn autoscalers_of<'a>(
        &'a self,
        deployment: &'a Deployment,
    ) -> impl Iterator<Item = &'a Autoscaler> + 'a {
        self.autoscalers.iter().filter(move |a| {
            a.namespace == deployment.namespace
                && &*a.target_kind == "Deployment"
                && a.target_name == deployment.name
        })
    }

    /// The ResourceQuotas of a namespace.
    pub fn quotas_in<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a ResourceQuota> {
        self.quotas
            .iter()
            .filter(move |q| &*q.namespace == namespace)
    }
}

/// What a surge in flight writes on its Deployment ([`SURGE_IN_FLIGHT_ANNOTATION`]), as
/// JSON: `{"replicas":1,"victim":"<uid>","pod":"<name>","deadline":<unix seconds>}`, with
/// `"cost":"<value>"` when the victim had a deletion cost of its own before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurgeMark {
    /// The replicas before the surge: what the Deployment is brought back to.
    pub replicas: i32,
    /// The victim's UID and name.
    pub victim_uid: String,
    pub victim: String,
    /// Unix seconds: after it, whoever finds the mark completes or rolls back the surge.
    pub deadline: i64,
    /// The victim's own [`POD_DELETION_COST_ANNOTATION`] before the surge marked it, put back
    /// when the surge is rolled back.
    pub cost: Option<String>,
}

impl SurgeMark {
    /// The annotation's value.
    pub fn encode(&self) -> String {
        let cost = self
            .cost
            .as_deref()
            .map(|c| format!(",\"cost\":{}", json_string(c)))
            .unwrap_or_default();
        format!(
            "{{\"replicas\":{},\"victim\":{},\"pod\":{},\"deadline\":{}{cost}}}",
            self.replicas,
            json_string(&self.victim_uid),
            json_string(&self.victim),
            self.deadline
        )
    }

    /// Reads the annotation's value; None when it is not one this program writes.
    pub fn decode(text: &str) -> Option<SurgeMark> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        Some(SurgeMark {
            replicas: i32::try_from(v.get("replicas")?.as_i64()?).ok()?,
            victim_uid: v.get("victim")?.as_str()?.to_string(),
            victim: v.get("pod")?.as_str()?.to_string(),
            deadline: v.get("deadline")?.as_i64()?,
            cost: match v.get("cost") {
                None => None,
                Some(c) => Some(c.as_str()?.to_string()),
            },
        })
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::pod;

    fn deployment(name: &str) -> Deployment {
        Deployment {
            namespace: "app".into(),
            name: name.into(),
            uid: format!("uid-{name}").into(),
            replicas: 1,
            paused: false,
            generation: 2,
            observed_generation: 2,
            status_replicas: 1,
            updated_replicas: 1,
            available_replicas: 1,
            surge_in_flight: None,
        }
    }

    #[test]
    fn a_pod_is_matched_to_its_deployment_by_its_replica_set_name_and_hash() {
        let mut w = Workloads {
            deployments: vec![deployment("web-x"), deployment("web")],
            ..Workloads::default()
        };
        w.sort();
        let web = pod("app", "web-5d9c-abcde")
            .owner("ReplicaSet", "web-5d9c")
            .label(POD_TEMPLATE_HASH_LABEL, "5d9c")
            .build();
        assert_eq!(w.deployment_of(&web).map(|d| &*d.name), Some("web"));
        // A ReplicaSet not named after the hash (not the Deployment controller's) has none.
        let bare_rs = pod("app", "web-1")
            .owner("ReplicaSet", "web")
            .label(POD_TEMPLATE_HASH_LABEL, "5d9c")
            .build();
        assert_eq!(w.deployment_of(&bare_rs), None);
        let other_ns = pod("other", "web-5d9c-abcde")
            .owner("ReplicaSet", "web-5d9c")
            .label(POD_TEMPLATE_HASH_LABEL, "5d9c")
            .build();
        assert_eq!(w.deployment_of(&other_ns), None);
    }

    #[test]
    fn a_rollout_is_seen_in_each_of_its_signs() {
        let d = deployment("web");
        assert_eq!(d.rolling_out(), None);
        let mut unobserved = d.clone();
        unobserved.generation = 3;
        assert!(unobserved.rolling_out().unwrap().contains("generation 3"));
        let mut updating = d.clone();
        updating.replicas = 3;
        updating.status_replicas = 3;
        updating.available_replicas = 3;
        updating.updated_replicas = 2;
        assert!(updating.rolling_out().unwrap().contains("2 of 3"));
        let mut old_left = d.clone();
        old_left.status_replicas = 2;
        assert!(old_left.rolling_out().unwrap().contains("terminating"));
        let mut unavailable = d;
        unavailable.available_replicas = 0;
        assert!(unavailable.rolling_out().unwrap().contains("available"));
    }

    #[test]
    fn a_quota_refuses_a_pod_that_would_pass_any_hard_amount() {
        let p = pod("app", "p").cpu(500).memory(1 << 30).build();
        let quota = |hard: &[(&str, i64)], used: &[(&str, i64)]| ResourceQuota {
            namespace: "app".into(),
            name: "q".into(),
            hard: hard.iter().map(|(n, v)| ((*n).into(), *v)).collect(),
            used: used.iter().map(|(n, v)| ((*n).into(), *v)).collect(),
        };
        assert_eq!(quota(&[("pods", 2)], &[("pods", 1)]).refuses(&p), None);
        assert!(quota(&[("pods", 2)], &[("pods", 2)])
            .refuses(&p)
            .unwrap()
            .contains("pods used 2 of 2"));
        assert!(quota(&[("count/pods", 1)], &[("count/pods", 1)])
            .refuses(&p)
            .is_some());
        assert!(quota(&[("requests.cpu", 1000)], &[("requests.cpu", 600)])
            .refuses(&p)
            .unwrap()
            .contains("needs 500"));
        assert_eq!(
            quota(&[("requests.cpu", 1000)], &[("requests.cpu", 500)]).refuses(&p),
            None
        );
        assert!(
            quota(&[("limits.memory", 1 << 30)], &[("limits.memory", 1)])
                .refuses(&p)
                .is_some()
        );
        // Objects other than pods and resources the pod does not request take nothing.
        assert_eq!(
            quota(
                &[("count/services", 0), ("requests.nvidia.com/gpu", 0)],
                &[("count/services", 0)]
            )
            .refuses(&p),
            None
        );
    }

    #[test]
    fn a_surge_mark_reads_back_what_it_wrote() {
        let mark = SurgeMark {
            replicas: 3,
            victim_uid: "u-1".into(),
            victim: "web-\"x\"".into(),
            deadline: 1_800_000_000,
            cost: None,
        };
        assert_eq!(SurgeMark::decode(&mark.encode()), Some(mark.clone()));
        let with_cost = SurgeMark {
            cost: Some("-5".into()),
            ..mark
        };
        assert_eq!(SurgeMark::decode(&with_cost.encode()), Some(with_cost));
        assert_eq!(SurgeMark::decode("not json"), None);
        assert_eq!(SurgeMark::decode("{\"replicas\":1}"), None);
    }
}
