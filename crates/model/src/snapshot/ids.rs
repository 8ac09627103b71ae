//! Node and pod ids: a node's place in [`ClusterSnapshot::nodes`](super::ClusterSnapshot) and
//! a pod's in its pods, each a type of its own so that one is never passed for the other.
//! Both are a `u32` inside; [`IdVec`] is a vector indexed by one of them.

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// What [`IdVec`] and [`IdRange`] need of an id.
pub trait Id: Copy + Ord {
    /// The id of the `i`th object.
    fn from_index(i: usize) -> Self;
    /// Its place in the list of its objects.
    fn index(self) -> usize;
}

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
        #[repr(transparent)]
        pub struct $name(u32);

        impl $name {
            /// The largest id (a marker for "none").
            pub const MAX: $name = $name(u32::MAX);

            pub const fn new(raw: u32) -> Self {
                $name(raw)
            }

            /// The id of the `i`th object (there are fewer than 2³² of them).
            #[inline]
            pub const fn from_index(i: usize) -> Self {
                debug_assert!(i <= u32::MAX as usize);
                $name(i as u32)
            }

            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl Id for $name {
            #[inline]
            fn from_index(i: usize) -> Self {
                $name::from_index(i)
            }

            #[inline]
            fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// A node: its place in the snapshot's nodes (sorted by name).
    NodeId
);
id!(
    /// A pod: its place in the snapshot's pods (sorted by namespace, then name).
    PodId
);

/// The ids from `start` up to `end` (not included), in order: a `Range` of ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdRange<I> {
    pub start: I,
    pub end: I,
}

impl<I: Id> IdRange<I> {
    /// The ids of the first `len` objects.
    pub fn first(len: usize) -> Self {
        IdRange {
            start: I::from_index(0),
            end: I::from_index(len),
        }
    }

    pub fn contains(&self, id: &I) -> bool {
        self.start <= *id && *id < self.end
    }
}

impl<I: Id> Iterator for IdRange<I> {
    type Item = I;

    #[inline]
    fn next(&mut self) -> Option<I> {
        (self.start < self.end).then(|| {
            let id = self.start;
            self.start = I::from_index(id.index() + 1);
            id
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end.index().saturating_sub(self.start.index());
        (n, Some(n))
    }
}

impl<I: Id> DoubleEndedIterator for IdRange<I> {
    #[inline]
    fn next_back(&mut self) -> Option<I> {
        (self.start < self.end).then(|| {
            self.end = I::from_index(self.end.index() - 1);
            self.end
        })
    }
}

impl<I: Id> ExactSizeIterator for IdRange<I> {}

/// A vector with one item per node (or per pod), indexed by the id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdVec<I, T> {
    items: Vec<T>,
    id: PhantomData<fn(I) -> I>,
}

impl<I, T> Default for IdVec<I, T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<I, T> From<Vec<T>> for IdVec<I, T> {
    fn from(items: Vec<T>) -> Self {
        IdVec {
            items,
            id: PhantomData,
        }
    }
}

impl<I, T> FromIterator<T> for IdVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(items: It) -> Self {
        Vec::from_iter(items).into()
    }
}

impl<I: Id, T> IdVec<I, T> {
    /// `len` copies of `item`.
    pub fn filled(item: T, len: usize) -> Self
    where
        T: Clone,
    {
        vec![item; len].into()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    /// The items in id order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items.iter_mut()
    }
}

impl<I: Id, T> Index<I> for IdVec<I, T> {
    type Output = T;

    #[inline]
    fn index(&self, id: I) -> &T {
        &self.items[id.index()]
    }
}

impl<I: Id, T> IndexMut<I> for IdVec<I, T> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        &mut self.items[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_their_index() {
        let n = NodeId::from_index(7);
        assert_eq!((n.index(), NodeId::new(7)), (7, n));
        assert_eq!(std::mem::size_of::<Option<PodId>>(), 8);
        assert_eq!(std::mem::size_of::<PodId>(), 4);
    }

    #[test]
    fn a_range_of_ids_counts_both_ways() {
        let r = IdRange::<PodId>::first(3);
        assert_eq!(r.len(), 3);
        assert!(r.contains(&PodId::new(2)) && !r.contains(&PodId::new(3)));
        let up: Vec<usize> = r.clone().map(PodId::index).collect();
        let down: Vec<usize> = r.rev().map(PodId::index).collect();
        assert_eq!((up, down), (vec![0, 1, 2], vec![2, 1, 0]));
        assert_eq!(IdRange::<NodeId>::first(0).next(), None);
    }

    #[test]
    fn an_id_vec_is_indexed_by_its_id() {
        let mut v: IdVec<NodeId, i32> = IdVec::filled(0, 2);
        v[NodeId::new(1)] += 5;
        assert_eq!((v[NodeId::new(0)], v[NodeId::new(1)]), (0, 5));
    }
}
