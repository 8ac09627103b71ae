//! A compact resource list: CPU in millicores, memory in bytes, a pod count, and any other
//! resource (ephemeral-storage, nvidia.com/gpu, hugepages-2Mi, ...) by name in whole units.

use std::fmt;

pub const RESOURCE_CPU: &str = "cpu";
pub const RESOURCE_MEMORY: &str = "memory";
pub const RESOURCE_PODS: &str = "pods";

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    /// Millicores.
    pub cpu: i64,
    /// Bytes.
    pub memory: i64,
    /// Number of pods (for a node: allocatable pods; for a pod's requests: 0).
    pub pods: i64,
    /// Other resources, sorted by name, in whole units.
    other: Vec<(Box<str>, i64)>,
}

impl Resources {
    pub fn new(cpu_milli: i64, memory: i64, pods: i64) -> Self {
        Resources {
            cpu: cpu_milli,
            memory,
            pods,
            other: Vec::new(),
        }
    }

    /// The amount of one resource, in the unit the planner compares (milli for CPU).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            RESOURCE_CPU => self.cpu,
            RESOURCE_MEMORY => self.memory,
            RESOURCE_PODS => self.pods,
            _ => self
                .other
                .binary_search_by(|(k, _)| k.as_ref().cmp(name))
                .map(|i| self.other[i].1)
                .unwrap_or(0),
        }
    }

    pub fn set(&mut self, name: &str, value: i64) {
        match name {
            RESOURCE_CPU => self.cpu = value,
            RESOURCE_MEMORY => self.memory = value,
            RESOURCE_PODS => self.pods = value,
            _ => match self.other.binary_search_by(|(k, _)| k.as_ref().cmp(name)) {
                Ok(i) => self.other[i].1 = value,
                Err(i) => self.other.insert(i, (name.into(), value)),
            },
        }
    }

    pub fn has(&self, name: &str) -> bool {
        match name {
            RESOURCE_CPU | RESOURCE_MEMORY | RESOURCE_PODS => true,
            _ => self
                .other
                .binary_search_by(|(k, _)| k.as_ref().cmp(name))
                .is_ok(),
        }
    }

    /// Every (name, value) pair, basic resources first.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        [
            (RESOURCE_CPU, self.cpu),
            (RESOURCE_MEMORY, self.memory),
            (RESOURCE_PODS, self.pods),
        ]
        .into_iter()
        .chain(self.other.iter().map(|(k, v)| (k.as_ref(), *v)))
    }

    /// Adds another list, resource by resource.
    pub fn add(&mut self, o: &Resources) {
        self.cpu += o.cpu;
        self.memory += o.memory;
        self.pods += o.pods;
        for (k, v) in &o.other {
            let cur = self.get(k);
            self.set(k, cur + v);
        }
    }

    /// [`add`](Self::add), or the name of the first resource whose sum does not fit an i64
    /// (then `self` is partly added to).
    pub fn checked_add(&mut self, o: &Resources) -> Result<(), Box<str>> {
        for (k, v) in o.iter() {
            let sum = self.get(k).checked_add(v).ok_or_else(|| Box::from(k))?;
            self.set(k, sum);
        }
        Ok(())
    }

    pub fn sub(&mut self, o: &Resources) {
        self.cpu -= o.cpu;
        self.memory -= o.memory;
        self.pods -= o.pods;
        for (k, v) in &o.other {
            let cur = self.get(k);
            self.set(k, cur - v);
        }
    }

    /// Adds one pod's requests and counts the pod.
    pub fn add_pod(&mut self, requests: &Resources) {
        self.add(requests);
        self.pods += 1;
    }

    /// Removes one pod's requests and its count.
    pub fn sub_pod(&mut self, requests: &Resources) {
        self.sub(requests);
        self.pods -= 1;
    }

    /// Per-resource maximum.
    pub fn max_with(&mut self, o: &Resources) {
        self.cpu = self.cpu.max(o.cpu);
        self.memory = self.memory.max(o.memory);
        self.pods = self.pods.max(o.pods);
        for (k, v) in &o.other {
            let cur = self.get(k);
            if !self.has(k) || *v > cur {
                self.set(k, (*v).max(cur));
            }
        }
    }

    pub fn is_zero(&self) -> bool {
        self.cpu == 0
            && self.memory == 0
            && self.pods == 0
            && self.other.iter().all(|(_, v)| *v == 0)
    }
}

impl fmt::Display for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cpu={}m memory={} pods={}",
            self.cpu, self.memory, self.pods
        )?;
        for (k, v) in &self.other {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sub_and_extended() {
        let mut a = Resources::new(100, 1000, 0);
        a.set("nvidia.com/gpu", 2);
        let mut node = Resources::default();
        node.add_pod(&a);
        node.add_pod(&a);
        assert_eq!(node.cpu, 200);
        assert_eq!(node.pods, 2);
        assert_eq!(node.get("nvidia.com/gpu"), 4);
        node.sub_pod(&a);
        assert_eq!(node.get("nvidia.com/gpu"), 2);
        assert_eq!(node.pods, 1);
        assert_eq!(node.get("example.com/none"), 0);
    }

    #[test]
    fn checked_add_names_the_resource_that_overflows() {
        let mut a = Resources::new(1, i64::MAX - 1, 0);
        a.set("nvidia.com/gpu", 1);
        assert_eq!(a.checked_add(&Resources::new(1, 1, 0)), Ok(()));
        assert_eq!(a.memory, i64::MAX);
        let err = a.checked_add(&Resources::new(0, 1, 0)).unwrap_err();
        assert_eq!(&*err, "memory");
        let mut gpu = Resources::default();
        gpu.set("nvidia.com/gpu", i64::MAX);
        assert_eq!(&*a.checked_add(&gpu).unwrap_err(), "nvidia.com/gpu");
    }

    #[test]
    fn max_is_per_resource() {
        let mut a = Resources::new(100, 5000, 0);
        let mut b = Resources::new(300, 1000, 0);
        b.set("x", 1);
        a.max_with(&b);
        assert_eq!((a.cpu, a.memory, a.get("x")), (300, 5000, 1));
    }
}
