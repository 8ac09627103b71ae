//! Pod shapes: pods with the same namespace, owners (kind and name, in order) and container
//! images have the same shape. That is what RemoveDuplicates compares; finding it while a
//! pod is decoded, with its strings still in the cache, spares the planner a hash of four
//! strings scattered over the heap for every pod.

use super::{Pod, Pods};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// The shape of a pod no [`Shapes`] has looked at yet.
pub const NO_SHAPE: u32 = u32::MAX;

/// No next shape in a hash bucket.
const END: u32 = u32::MAX;

/// The shapes found so far for a list of pods, each with one pod of it.
#[derive(Default)]
pub struct Shapes {
    /// Hash of a shape to the last shape with that hash; `next` chains the others.
    heads: FxHashMap<u64, u32>,
    next: Vec<u32>,
    hashes: Vec<u64>,
    /// Per shape: the index of one of its pods in the list.
    reps: Vec<u32>,
}

/// A list of pods read by index: one vector, or the snapshot's [`Pods`].
pub trait PodList {
    fn at(&self, i: usize) -> Option<&Pod>;
    fn count(&self) -> usize;
}

impl PodList for [Pod] {
    fn at(&self, i: usize) -> Option<&Pod> {
        self.get(i)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl PodList for Pods {
    fn at(&self, i: usize) -> Option<&Pod> {
        self.get(i)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

fn hash(pod: &Pod) -> u64 {
    let mut h = FxHasher::default();
    pod.namespace.hash(&mut h);
    for o in pod.owners.iter() {
        o.kind.hash(&mut h);
        o.name.hash(&mut h);
    }
    pod.images.hash(&mut h);
    h.finish()
}

fn same(a: &Pod, b: &Pod) -> bool {
    a.namespace == b.namespace
        && a.images == b.images
        && a.owners.len() == b.owners.len()
        && a.owners
            .iter()
            .zip(b.owners.iter())
            .all(|(x, y)| x.kind == y.kind && x.name == y.name)
}

impl Shapes {
    /// How many shapes there are.
    pub fn len(&self) -> usize {
        self.reps.len()
    }

    /// Whether there is no shape (no pod).
    pub fn is_empty(&self) -> bool {
        self.reps.is_empty()
    }

    /// The shape of `pod` among those with a pod in `pods` (shapes being taken in from
    /// another list, whose pods are not in `pods` yet, are all different from each other).
    fn find<P: PodList + ?Sized>(&self, hash: u64, pods: &P, pod: &Pod) -> Option<u32> {
        let mut s = self.heads.get(&hash).copied().unwrap_or(END);
        while s != END {
            if pods
                .at(self.reps[s as usize] as usize)
                .is_some_and(|rep| same(rep, pod))
            {
                return Some(s);
            }
            s = self.next[s as usize];
        }
        None
    }

    /// The index of shape `s`'s pod in the list (the first pod of that shape).
    pub fn rep(&self, s: u32) -> usize {
        self.reps[s as usize] as usize
    }

    fn add(&mut self, hash: u64, rep: usize) -> u32 {
        let s = self.reps.len() as u32;
        let head = self.heads.entry(hash).or_insert(END);
        self.next.push(*head);
        *head = s;
        self.hashes.push(hash);
        self.reps.push(rep as u32);
        s
    }

    /// The shape of `pod`, which is (or is about to be) `pods[at]`; earlier pods of `pods`
    /// are the ones these shapes were found for.
    pub fn shape<P: PodList + ?Sized>(&mut self, pods: &P, pod: &Pod, at: usize) -> u32 {
        let h = hash(pod);
        match self.find(h, pods, pod) {
            Some(s) => s,
            None => self.add(h, at),
        }
    }

    /// Takes in the shapes `more` found for `more_pods`, which are about to be appended to
    /// `pods`, and renumbers those pods' shapes to these.
    pub fn append<P: PodList + ?Sized>(&mut self, pods: &P, more: Shapes, more_pods: &mut [Pod]) {
        let offset = pods.count();
        let renumber: Vec<u32> = (0..more.len())
            .map(|s| {
                let (h, rep) = (more.hashes[s], more.reps[s] as usize);
                match self.find(h, pods, &more_pods[rep]) {
                    Some(found) => found,
                    None => self.add(h, offset + rep),
                }
            })
            .collect();
        for pod in more_pods {
            if let Some(&s) = renumber.get(pod.shape as usize) {
                pod.shape = s;
            }
        }
    }
}

/// Every pod's shape, found afresh (for pods that were not decoded, such as built ones).
pub(crate) fn find_all<P: PodList + ?Sized>(pods: &P) -> (Vec<u32>, usize) {
    let mut shapes = Shapes::default();
    let of = (0..pods.count())
        .filter_map(|i| pods.at(i))
        .enumerate()
        .map(|(i, p)| shapes.shape(pods, p, i))
        .collect();
    (of, shapes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::pod;

    fn pods() -> Vec<Pod> {
        let web = pod("a", "w").owner("ReplicaSet", "web").build().owners[0].clone();
        let job = pod("a", "j").owner("Job", "x").build().owners[0].clone();
        let two = |name: &str, owners: [&crate::snapshot::OwnerRef; 2], images: &[&str]| {
            let mut p = pod("a", name).bare().images(images).build();
            p.owners = owners.into_iter().cloned().collect();
            p
        };
        vec![
            pod("a", "p0")
                .owner("ReplicaSet", "web")
                .image("web:1")
                .build(),
            pod("a", "p1")
                .owner("ReplicaSet", "web")
                .image("web:1")
                .build(),
            // Another image, namespace, owner kind, owner name: other shapes.
            pod("a", "p2")
                .owner("ReplicaSet", "web")
                .image("web:2")
                .build(),
            pod("b", "p3")
                .owner("ReplicaSet", "web")
                .image("web:1")
                .build(),
            pod("a", "p4")
                .owner("StatefulSet", "web")
                .image("web:1")
                .build(),
            pod("a", "p5")
                .owner("ReplicaSet", "api")
                .image("web:1")
                .build(),
            // Two owners: their order counts (images are kept sorted).
            two("p6", [&web, &job], &["b", "a"]),
            two("p7", [&web, &job], &["a", "b"]),
            two("p8", [&job, &web], &["a", "b"]),
            pod("a", "p9").bare().image("web:1").build(),
            pod("a", "p10").bare().image("web:1").build(),
        ]
    }

    #[test]
    fn pods_share_a_shape_exactly_when_namespace_owners_and_images_agree() {
        let pods = pods();
        let (of, count) = find_all(&pods[..]);
        assert_eq!(of, vec![0, 0, 1, 2, 3, 4, 5, 5, 6, 7, 7]);
        assert_eq!(count, 8);
    }

    #[test]
    fn shapes_found_in_two_halves_and_appended_are_those_of_the_whole() {
        let all = pods();
        let (whole, count) = find_all(&all[..]);
        for cut in 0..=all.len() {
            let (mut first, mut second) = (all[..cut].to_vec(), all[cut..].to_vec());
            let mut a = Shapes::default();
            for i in 0..first.len() {
                first[i].shape = a.shape(&first[..], &first[i], i);
            }
            let mut b = Shapes::default();
            for i in 0..second.len() {
                second[i].shape = b.shape(&second[..], &second[i], i);
            }
            // Found afresh over the two parts read as one list: the same shapes.
            let parts = Pods::of(first.clone(), second.clone());
            assert_eq!(find_all(&parts), (whole.clone(), count), "cut at {cut}");
            a.append(&first[..], b, &mut second);
            first.append(&mut second);
            let joined: Vec<u32> = first.iter().map(|p| p.shape).collect();
            assert_eq!(joined, whole, "cut at {cut}");
            assert_eq!(a.len(), count);
        }
    }
}
