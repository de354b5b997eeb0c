//! What transcripts say about each other: which messages each session wrote itself (a
//! resumed session replays its predecessor's lines under the same uuids, Q9) and the
//! `summary` labels later files give to a conversation's leaf messages (Q5).
//!
//! | key | value |
//! |---|---|
//! | `U`, session id | the session's own message uuids, 16 bytes each |
//! | `l`, leaf uuid | the label a `summary` line gave it |

use std::collections::HashMap;

use eywa_storage::{Batch, Keyspace};

use super::Graph;
use crate::Result;
use crate::model::uuid_key;

const SESSION_UUIDS: u8 = b'U';
const LABEL: u8 = b'l';

fn key(tag: u8, name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + 1);
    key.push(tag);
    key.extend_from_slice(name.as_bytes());
    key
}

impl Graph {
    /// Every session's own message uuids ([`uuid_key`]s), by session id.
    pub fn session_uuids(&self) -> Result<Vec<(String, Vec<u128>)>> {
        let mut out = Vec::new();
        for entry in self.store.entries(Keyspace::Messages, &[SESSION_UUIDS]) {
            let (key, value) = entry?;
            let session = String::from_utf8_lossy(&key[1..]).into_owned();
            let uuids = value
                .chunks_exact(16)
                .map(|c| u128::from_be_bytes(c.try_into().expect("16-byte chunks")))
                .collect();
            out.push((session, uuids));
        }
        Ok(out)
    }

    /// Records the messages `session` wrote itself (replays left out), replacing what an
    /// earlier read of it recorded.
    pub fn put_session_uuids(batch: &mut Batch, session: &str, uuids: &[u128]) {
        let bytes: Vec<u8> = uuids.iter().flat_map(|u| u.to_be_bytes()).collect();
        batch.put_raw(Keyspace::Messages, key(SESSION_UUIDS, session), bytes);
    }

    /// Every `summary` label, by the [`uuid_key`] of the leaf it names.
    pub fn labels(&self) -> Result<HashMap<u128, String>> {
        let mut out = HashMap::new();
        for entry in self.store.scan::<String>(Keyspace::Messages, &[LABEL]) {
            let (key, label) = entry?;
            out.insert(uuid_key(&String::from_utf8_lossy(&key[1..])), label);
        }
        Ok(out)
    }

    /// Records the label a `summary` line gives to the message `leaf`.
    pub fn put_label(batch: &mut Batch, leaf: &str, label: &str) -> Result<()> {
        batch.put(Keyspace::Messages, key(LABEL, leaf), label)?;
        Ok(())
    }
}
