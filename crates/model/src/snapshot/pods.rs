//! The snapshot's pods: one list, held in two parts.
//!
//! A large snapshot is decoded by two threads, each into its own list. Joining them into one
//! vector would move tens of megabytes into freshly faulted memory; the second part is kept
//! as it is instead, and the pods are read through [`PodId`](super::PodId) indexes across
//! both.

use std::ops::Index;

use super::Pod;

/// Pods in namespace/name order: `head`, then `tail`.
#[derive(Debug, Clone, Default)]
pub struct Pods {
    head: Vec<Pod>,
    tail: Vec<Pod>,
}

impl Pods {
    /// The pods of `head` followed by those of `tail`.
    pub fn of(head: Vec<Pod>, tail: Vec<Pod>) -> Pods {
        if head.is_empty() {
            return Pods {
                head: tail,
                tail: Vec::new(),
            };
        }
        Pods { head, tail }
    }

    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&Pod> {
        let (list, j) = self.locate(i);
        list.get(j)
    }

    /// The part pod `i` is in, and its index there. Chosen without a branch (pods are read
    /// in no particular order, and a mispredicted branch per read adds up).
    #[inline]
    fn locate(&self, i: usize) -> (&Vec<Pod>, usize) {
        let h = self.head.len();
        let in_tail = i >= h;
        let list = if in_tail { &self.tail } else { &self.head };
        (list, i - h * usize::from(in_tail))
    }

    /// In order.
    pub fn iter(&self) -> std::iter::Chain<std::slice::Iter<'_, Pod>, std::slice::Iter<'_, Pod>> {
        self.head.iter().chain(self.tail.iter())
    }

    pub fn iter_mut(
        &mut self,
    ) -> std::iter::Chain<std::slice::IterMut<'_, Pod>, std::slice::IterMut<'_, Pod>> {
        self.head.iter_mut().chain(self.tail.iter_mut())
    }

    /// Every pod in one vector.
    pub fn to_vec(&self) -> Vec<Pod> {
        self.iter().cloned().collect()
    }

    /// The pods as one vector (moves the second part after the first).
    pub(crate) fn into_vec(self) -> Vec<Pod> {
        let Pods { mut head, mut tail } = self;
        head.append(&mut tail);
        head
    }
}

impl Index<usize> for Pods {
    type Output = Pod;

    fn index(&self, i: usize) -> &Pod {
        let (list, j) = self.locate(i);
        &list[j]
    }
}

impl<'a> IntoIterator for &'a Pods {
    type Item = &'a Pod;
    type IntoIter = std::iter::Chain<std::slice::Iter<'a, Pod>, std::slice::Iter<'a, Pod>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<Vec<Pod>> for Pods {
    fn from(pods: Vec<Pod>) -> Pods {
        Pods::of(pods, Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::pod;

    fn names(pods: &Pods) -> Vec<String> {
        pods.iter().map(|p| p.name.to_string()).collect()
    }

    #[test]
    fn two_parts_read_as_one_list() {
        let p = |n: &str| pod("d", n).build();
        let pods = Pods::of(vec![p("a"), p("b")], vec![p("c"), p("d"), p("e")]);
        assert_eq!(pods.len(), 5);
        assert_eq!(names(&pods), ["a", "b", "c", "d", "e"]);
        let by_index: Vec<&str> = (0..pods.len()).map(|i| &*pods[i].name).collect();
        assert_eq!(by_index, ["a", "b", "c", "d", "e"]);
        assert_eq!(pods.get(1).map(|p| &*p.name), Some("b"));
        assert_eq!(pods.get(2).map(|p| &*p.name), Some("c"));
        assert!(pods.get(5).is_none());
        assert_eq!(names(&Pods::from(pods.to_vec())), names(&pods));
        assert_eq!(
            pods.clone()
                .into_vec()
                .iter()
                .map(|p| &*p.name)
                .collect::<Vec<_>>(),
            ["a", "b", "c", "d", "e"]
        );
        // Either part may be empty.
        let only_tail = Pods::of(Vec::new(), vec![p("x")]);
        assert_eq!((only_tail.len(), &*only_tail[0].name), (1, "x"));
        assert!(Pods::of(Vec::new(), Vec::new()).is_empty());
        assert!(!Pods::of(vec![p("y")], Vec::new()).is_empty());
    }
}
