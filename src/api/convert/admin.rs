//! The Admin service's messages: stats, the embedding model's status, checks and backups.

use crate::engine::{CacheStats, TierStats};

use super::wire::wire;
use crate::api::pb;
use crate::embed::{Installed, ModelStatus};
use crate::engine::{BackupManifest, BackupReport, CheckReport, SemanticStatus, Stats};

wire! {
    Stats <=> pb::StatsResponse {
        counts => { sessions, agents, episodes, entities, edges, sources, skipped_lines }: counts,
        kinds = nodes_by_kind: collect, relations = edges_by_relation: collect,
        tiers: required, caches: messages, semantic: required, failed_documents: messages,
        failed_document_count,
    }
}

wire! {
    CacheStats <=> pb::CacheStats {
        name: into, capacity: size, len: size, hits, misses, evictions,
    }
    to_wire(c) { hit_rate: c.hit_rate() }
    // Not sent: nothing shows it.
    from_wire(_c) { inserts: 0 }
}

wire! {
    SemanticStatus <=> pb::Semantic {
        model: text, unavailable: text, vectors, backlog, rebuilding,
    }
}

wire! {
    TierStats <=> pb::TierStats {
        warm_chunks, warm_bytes = warm_chunk_bytes, cold_chunks,
        cold_raw_bytes = cold_chunk_bytes, blobs, blob_raw_bytes, blob_stored_bytes,
        warm_disk_bytes = warm_bytes,
    }
    to_wire(t) { compression_ratio: t.compression_ratio() }
}

wire! {
    ModelStatus <=> pb::ModelStatusResponse { path: path, installed: maybe, model_id: text }
}

wire! {
    Installed <=> pb::InstalledModel {
        model, weights_sha256, source, from, installed_at, bytes,
    }
}

// A server's check is never a repair: that needs the store alone.
wire! {
    CheckReport <=> pb::CheckResponse {
        graph, archive, semantic, text, problems, blobs_checked, seconds,
    }
    from_wire(_r) { repaired: Vec::new(), unrepaired: 0 }
}

// A server's backup is on the server's machine.
wire! {
    BackupReport <=> pb::BackupResponse { dir = directory, seconds }
    to_wire(r) {
        sessions: r.manifest.sessions, episodes: r.manifest.episodes,
        bytes: r.manifest.bytes, created: r.manifest.created.clone(),
    }
    from_wire(r) {
        manifest: BackupManifest {
            version: String::new(), format: 0, created: r.created.clone(), from: String::new(),
            sessions: r.sessions, episodes: r.episodes, bytes: r.bytes,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Counts;

    #[test]
    fn stats_cross_the_wire_unchanged() {
        let stats = Stats {
            counts: Counts {
                sessions: 1,
                agents: 2,
                episodes: 3,
                entities: 4,
                edges: 5,
                sources: 6,
                skipped_lines: 7,
            },
            kinds: [("Episode".to_owned(), 3), ("File".to_owned(), 4)].into(),
            relations: [("MODIFIED".to_owned(), 5)].into(),
            tiers: TierStats {
                warm_chunks: 8,
                warm_bytes: 9,
                cold_chunks: 10,
                cold_raw_bytes: 11,
                blobs: 12,
                blob_raw_bytes: 13,
                blob_stored_bytes: 14,
                warm_disk_bytes: 15,
            },
            caches: vec![CacheStats {
                name: "nodes".into(),
                capacity: 16,
                len: 17,
                hits: 18,
                misses: 19,
                inserts: 0,
                evictions: 20,
            }],
            semantic: crate::engine::SemanticStatus {
                model: Some("all-MiniLM-L6-v2@53aa5117".to_owned()),
                unavailable: None,
                vectors: 21,
                backlog: 22,
                rebuilding: true,
            },
            failed_documents: vec![crate::docs::FailedDocument {
                path: "/d/bomb.pdf".to_owned(),
                reason: "a page of the PDF inflates past 32 MB".to_owned(),
                failed_at: crate::model::Timestamp(1_700_000_000_000),
                bytes: 23,
                modified_at: crate::model::Timestamp(1_600_000_000_000),
            }],
            failed_document_count: 24,
        };
        let wire = pb::StatsResponse::from(stats.clone());
        let counted = (
            wire.sessions,
            wire.agents,
            wire.episodes,
            wire.entities,
            wire.edges,
        );
        assert_eq!(counted, (1, 2, 3, 4, 5));
        assert_eq!((wire.sources, wire.skipped_lines), (6, 7));
        assert_eq!(Stats::try_from(wire).unwrap(), stats);
        let off = crate::engine::SemanticStatus {
            model: None,
            unavailable: Some("no embedding model".to_owned()),
            ..Default::default()
        };
        assert_eq!(
            crate::engine::SemanticStatus::try_from(pb::Semantic::from(off.clone())).unwrap(),
            off
        );
    }
}
