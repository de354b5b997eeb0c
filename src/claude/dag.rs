//! Conversation order from the `parentUuid` chain (Q9, Q20).
//!
//! File order is not conversation order: timestamps step backwards, rewinds fork the chain,
//! compaction starts new roots, rows go missing (orphans) and chains can even cycle. The
//! order used everywhere is a depth-first walk of the chain: roots and siblings in
//! timestamp order (file position breaking ties), every line exactly once.

use std::collections::HashMap;

pub use crate::model::uuid_key;

/// One line of the chain: its uuid, its parent's, and its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    pub uuid: u128,
    /// `parentUuid`, or for a `compact_boundary` its `logicalParentUuid`.
    pub parent: Option<u128>,
    pub timestamp: Option<i64>,
}

impl Link {
    pub fn new(uuid: &str, parent: Option<&str>, timestamp: Option<i64>) -> Self {
        Link {
            uuid: uuid_key(uuid),
            parent: parent.map(uuid_key),
            timestamp,
        }
    }
}

/// The positions of `links` in conversation order.
///
/// A line whose parent is missing (an orphan) or itself becomes a root; a line whose uuid
/// repeats an earlier one is left out (the caller dedupes replays first, so this only
/// guards the walk); a cycle, which no root reaches, is entered at its earliest line and
/// broken there.
pub fn order(links: &[Link]) -> Vec<usize> {
    let mut index: HashMap<u128, usize> = HashMap::with_capacity(links.len());
    let mut duplicate = vec![false; links.len()];
    for (i, link) in links.iter().enumerate() {
        match index.entry(link.uuid) {
            std::collections::hash_map::Entry::Occupied(_) => duplicate[i] = true,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }
    let key = |i: usize| (links[i].timestamp.unwrap_or(i64::MAX), i);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); links.len()];
    let mut roots = Vec::new();
    for (i, link) in links.iter().enumerate() {
        if duplicate[i] {
            continue;
        }
        match link.parent.and_then(|p| index.get(&p)) {
            Some(&p) if p != i => children[p].push(i),
            _ => roots.push(i),
        }
    }
    for list in &mut children {
        list.sort_by_key(|&i| key(i));
    }
    roots.sort_by_key(|&i| key(i));

    let mut out = Vec::with_capacity(links.len());
    let mut visited = duplicate;
    let walk = |start: usize, visited: &mut Vec<bool>, out: &mut Vec<usize>| {
        // Iterative: a chain is as deep as the session is long.
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            if visited[i] {
                continue;
            }
            visited[i] = true;
            out.push(i);
            stack.extend(children[i].iter().rev().copied().filter(|&c| !visited[c]));
        }
    };
    for root in roots {
        walk(root, &mut visited, &mut out);
    }
    if out.len() < links.len() {
        // What is left hangs off cycles: enter each at its earliest line.
        let mut rest: Vec<usize> = (0..links.len()).filter(|&i| !visited[i]).collect();
        rest.sort_by_key(|&i| key(i));
        for start in rest {
            walk(start, &mut visited, &mut out);
        }
    }
    out
}

/// The rank of each position in conversation order (`usize::MAX` for left-out duplicates).
pub(super) fn ranks(links: &[Link]) -> Vec<usize> {
    let mut rank = vec![usize::MAX; links.len()];
    for (r, i) in order(links).into_iter().enumerate() {
        rank[i] = r;
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(uuid: &str, parent: Option<&str>, ts: i64) -> Link {
        Link::new(uuid, parent, Some(ts))
    }

    #[test]
    fn the_chain_wins_over_timestamps_and_file_order() {
        // File order c, a, b; timestamps say b first; the chain says a → b → c.
        let links = [
            link("c", Some("b"), 1),
            link("a", None, 5),
            link("b", Some("a"), 0),
        ];
        assert_eq!(order(&links), [1, 2, 0]);
    }

    #[test]
    fn forks_are_walked_branch_by_branch_earliest_first() {
        // A rewind: r has two children; the abandoned branch (x1, x2) is older.
        let links = [
            link("r", None, 0),
            link("x1", Some("r"), 1),
            link("y1", Some("r"), 5),
            link("x2", Some("x1"), 6),
            link("y2", Some("y1"), 7),
        ];
        assert_eq!(order(&links), [0, 1, 3, 2, 4]);
    }

    #[test]
    fn orphans_become_roots_in_time_order() {
        let links = [
            link("a", None, 10),
            link("o", Some("never-written"), 5),
            link("b", Some("a"), 11),
            link("p", Some("o"), 6),
        ];
        assert_eq!(order(&links), [1, 3, 0, 2]);
    }

    #[test]
    fn cycles_are_broken_and_every_line_comes_out_once() {
        let links = [
            link("a", Some("c"), 3),
            link("b", Some("a"), 4),
            link("c", Some("b"), 2),
            link("self", Some("self"), 9),
            link("z", None, 0),
        ];
        // Roots z and self (a self-parent is no parent) first; then the cycle, entered at
        // its earliest line c.
        assert_eq!(order(&links), [4, 3, 2, 0, 1]);
    }

    #[test]
    fn repeated_uuids_come_out_once() {
        let links = [
            link("a", None, 0),
            link("b", Some("a"), 1),
            link("a", None, 0),
        ];
        assert_eq!(order(&links), [0, 1]);
        assert_eq!(ranks(&links), [0, 1, usize::MAX]);
    }

    #[test]
    fn uuids_are_their_own_bits_and_other_ids_hash_stably() {
        let id = "6f1d0c2e-8a4b-4c3d-9e2f-0a1b2c3d4e5f";
        assert_eq!(uuid_key(id), 0x6f1d0c2e_8a4b_4c3d_9e2f_0a1b2c3d4e5f);
        assert_eq!(uuid_key("u1"), uuid_key("u1"));
        assert_ne!(uuid_key("u1"), uuid_key("u2"));
        // FNV-1a 128 of the empty string is its offset basis.
        assert_eq!(uuid_key(""), 0x6c62272e07bb014262b821756295c58d);
    }

    #[test]
    fn deep_chains_do_not_overflow_the_stack() {
        let names: Vec<String> = (0..200_000).map(|i| format!("u{i}")).collect();
        let links: Vec<Link> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Link::new(n, i.checked_sub(1).map(|p| names[p].as_str()), None))
            .collect();
        let out = order(&links);
        assert_eq!(out.len(), links.len());
        assert!(out.windows(2).all(|w| w[0] + 1 == w[1]));
    }
}
