//! What transcripts say about each other: which session first wrote a message uuid (a
//! resumed session replays its predecessor's lines under the same uuids, Q9) and the
//! `summary` labels later files give to a conversation's leaf messages (Q5).

use std::collections::HashMap;

use eywa_storage::{Batch, Keyspace};

use super::Graph;
use crate::Result;

const OWNER: u8 = b'u';
const LABEL: u8 = b'l';

fn key(tag: u8, uuid: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(uuid.len() + 1);
    key.push(tag);
    key.extend_from_slice(uuid.as_bytes());
    key
}

impl Graph {
    /// The session that first wrote the message `uuid`.
    pub fn message_owner(&self, uuid: &str) -> Result<Option<String>> {
        Ok(self.store.get(Keyspace::Messages, &key(OWNER, uuid))?)
    }

    /// Every `summary` label, by the leaf uuid it names.
    pub fn labels(&self) -> Result<HashMap<String, String>> {
        let mut out = HashMap::new();
        for entry in self.store.scan::<String>(Keyspace::Messages, &[LABEL]) {
            let (key, label) = entry?;
            out.insert(String::from_utf8_lossy(&key[1..]).into_owned(), label);
        }
        Ok(out)
    }

    /// Records `session` as the writer of `uuids` (messages it wrote, not replayed).
    pub fn put_message_owner(batch: &mut Batch, session: &str, uuids: &[String]) -> Result<()> {
        for uuid in uuids {
            batch.put(Keyspace::Messages, key(OWNER, uuid), session)?;
        }
        Ok(())
    }

    /// Records the label a `summary` line gives to the message `leaf`.
    pub fn put_label(batch: &mut Batch, leaf: &str, label: &str) -> Result<()> {
        batch.put(Keyspace::Messages, key(LABEL, leaf), label)?;
        Ok(())
    }
}
