use std::io::BufRead;

use super::line::{Block, Line, LineKind};
use super::transcript::prompt_of;
use crate::model::Timestamp;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// A message of the conversation: what a person typed or the assistant wrote (tool calls,
/// tool output and Claude Code's own wrappers left out).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Message {
    pub uuid: Option<String>,
    pub role: Role,
    pub timestamp: Option<Timestamp>,
    pub text: String,
}

/// The messages of a transcript in file order. Lines of one assistant response spread over
/// several lines come out as separate messages, one per text block.
pub fn read_messages(reader: impl std::io::Read) -> std::io::Result<Vec<Message>> {
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, reader);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let Some(line) = Line::parse(buf.trim_ascii()) else {
            continue;
        };
        let timestamp = line.timestamp().and_then(Timestamp::parse);
        let uuid = line.uuid().map(str::to_owned);
        match line.kind {
            LineKind::User => {
                if let Some(text) = prompt_of(&line, false) {
                    out.push(Message {
                        uuid,
                        role: Role::User,
                        timestamp,
                        text,
                    });
                }
            }
            LineKind::Assistant if !line.is_sidechain() => {
                for block in line.blocks() {
                    if let Block::Text(text) = block
                        && !text.trim().is_empty()
                    {
                        out.push(Message {
                            uuid: uuid.clone(),
                            role: Role::Assistant,
                            timestamp,
                            text: text.to_owned(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}
