//! Handoffs (seed 000): what a session left for the next one, the fields `get` scores.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::NodeId;

/// What a session left for the next one (seed 000): the fields `eywa get` scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    /// The full session uuid.
    pub session_id: String,
    /// The 8-character id Eywa names handoffs by.
    pub short_id: String,
    /// The session's Episode node.
    pub episode: NodeId,
    /// The session's date (UTC, from its first line).
    pub date: NaiveDate,
    /// Start of the session, for ordering handoffs of the same date.
    pub started_at: super::Timestamp,
    /// Minutes of work (the episode's active minutes); `None` when unknown.
    #[serde(default)]
    pub duration_minutes: Option<u32>,
    /// The model that answered most; `None` when none did.
    #[serde(default)]
    pub model: Option<String>,
    /// Action-oriented, 5–10 words.
    pub headline: String,
    /// Names of the projects the session worked in, in order of first appearance.
    pub projects: Vec<String>,
    /// Up to eight terms the session used most, most used first.
    pub keywords: Vec<String>,
    /// 0 = no work, 1 = a single task, 2 = multi-step.
    pub substance: u8,
    /// Working directory, so a reader can `cd` there and `claude --resume`.
    #[serde(default)]
    pub cwd: String,
    /// The body of the handoff document.
    #[serde(default)]
    pub sections: HandoffSections,
    /// Who wrote the session, and on which machine (its episode's); not in the handoff
    /// files, whose format is seed 000's.
    #[serde(default)]
    pub user: String,
    /// See `user`.
    #[serde(default)]
    pub machine: String,
}

/// The sections of a handoff's body, below its `# {headline}` (seed 000).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffSections {
    /// 2–5 chronological bullets.
    pub what_happened: Vec<String>,
    /// Decisions and learnings: (topic, explanation), written `**Topic** -- explanation`.
    pub insights: Vec<(String, String)>,
    /// Important files, one per line (written for substance 2 only).
    pub key_files: Vec<String>,
    /// TODOs and unfinished work.
    pub open_threads: Vec<String>,
}

impl Handoff {
    /// Seed 000's human-readable duration: `<1m`, `10m`, `2h 5m`.
    pub fn duration_label(&self) -> String {
        self.duration_minutes
            .map_or_else(|| "unknown".to_owned(), super::minutes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_labels() {
        let mut h = Handoff {
            session_id: "s".into(),
            short_id: "s".into(),
            episode: NodeId::episode("s"),
            date: NaiveDate::from_ymd_opt(2026, 2, 16).unwrap(),
            started_at: super::super::Timestamp(0),
            duration_minutes: None,
            model: None,
            headline: String::new(),
            projects: vec![],
            keywords: vec![],
            substance: 1,
            cwd: String::new(),
            sections: HandoffSections::default(),
            user: String::new(),
            machine: String::new(),
        };
        let cases = [(None, "unknown"), (Some(0), "<1m"), (Some(10), "10m")];
        for (minutes, label) in cases {
            h.duration_minutes = minutes;
            assert_eq!(h.duration_label(), label);
        }
        h.duration_minutes = Some(120);
        assert_eq!(h.duration_label(), "2h");
        h.duration_minutes = Some(125);
        assert_eq!(h.duration_label(), "2h 5m");
    }
}
