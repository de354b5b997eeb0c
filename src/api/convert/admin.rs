//! The Admin service's messages: stats, the embedding model's status, checks and backups.

use crate::engine::{CacheStats, TierStats};

use super::some;
use crate::api::pb;
use crate::embed::{Installed, ModelStatus};
use crate::engine::{BackupManifest, BackupReport, CheckReport, SemanticStatus, Stats};
use crate::graph::Counts;

impl From<Stats> for pb::StatsResponse {
    fn from(stats: Stats) -> Self {
        let Stats {
            counts,
            kinds,
            relations,
            tiers,
            caches,
            semantic,
        } = stats;
        let Counts {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
        } = counts;
        pb::StatsResponse {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
            nodes_by_kind: kinds.into_iter().collect(),
            edges_by_relation: relations.into_iter().collect(),
            tiers: Some(tiers.into()),
            caches: caches
                .into_iter()
                .map(|c| pb::CacheStats {
                    hit_rate: c.hit_rate(),
                    name: c.name.into_owned(),
                    capacity: c.capacity as u64,
                    len: c.len as u64,
                    hits: c.hits,
                    misses: c.misses,
                    evictions: c.evictions,
                })
                .collect(),
            semantic: Some(semantic.into()),
        }
    }
}

/// A server's stats, as `eywa stats` shows them while `eywa serve` holds the store.
impl From<pb::StatsResponse> for Stats {
    fn from(stats: pb::StatsResponse) -> Self {
        let pb::StatsResponse {
            sessions,
            agents,
            episodes,
            entities,
            edges,
            sources,
            skipped_lines,
            nodes_by_kind,
            edges_by_relation,
            tiers,
            caches,
            semantic,
        } = stats;
        Stats {
            counts: Counts {
                sessions,
                agents,
                episodes,
                entities,
                edges,
                sources,
                skipped_lines,
            },
            kinds: nodes_by_kind.into_iter().collect(),
            relations: edges_by_relation.into_iter().collect(),
            tiers: tiers.map(Into::into).unwrap_or_default(),
            caches: caches
                .into_iter()
                .map(|c| CacheStats {
                    name: c.name.into(),
                    capacity: usize::try_from(c.capacity).unwrap_or(usize::MAX),
                    len: usize::try_from(c.len).unwrap_or(usize::MAX),
                    hits: c.hits,
                    misses: c.misses,
                    // Not sent: nothing shows it.
                    inserts: 0,
                    evictions: c.evictions,
                })
                .collect(),
            semantic: semantic.map(Into::into).unwrap_or_default(),
        }
    }
}

impl From<pb::Semantic> for SemanticStatus {
    fn from(semantic: pb::Semantic) -> Self {
        let pb::Semantic {
            model,
            unavailable,
            vectors,
            backlog,
            rebuilding,
        } = semantic;
        SemanticStatus {
            model: (!model.is_empty()).then_some(model),
            unavailable: (!unavailable.is_empty()).then_some(unavailable),
            vectors,
            backlog,
            rebuilding,
        }
    }
}

impl From<SemanticStatus> for pb::Semantic {
    fn from(status: SemanticStatus) -> Self {
        let SemanticStatus {
            model,
            unavailable,
            vectors,
            backlog,
            rebuilding,
        } = status;
        pb::Semantic {
            model: model.unwrap_or_default(),
            unavailable: unavailable.unwrap_or_default(),
            vectors,
            backlog,
            rebuilding,
        }
    }
}

impl From<TierStats> for pb::TierStats {
    fn from(tiers: TierStats) -> Self {
        let compression_ratio = tiers.compression_ratio();
        let TierStats {
            warm_chunks,
            warm_bytes,
            cold_chunks,
            cold_raw_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            warm_disk_bytes,
        } = tiers;
        pb::TierStats {
            warm_bytes: warm_disk_bytes,
            warm_chunks,
            warm_chunk_bytes: warm_bytes,
            cold_chunks,
            cold_chunk_bytes: cold_raw_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            compression_ratio,
        }
    }
}

impl From<pb::TierStats> for TierStats {
    fn from(tiers: pb::TierStats) -> Self {
        let pb::TierStats {
            warm_bytes,
            warm_chunks,
            warm_chunk_bytes,
            cold_chunks,
            cold_chunk_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            // Computed from the rest.
            compression_ratio: _,
        } = tiers;
        TierStats {
            warm_chunks,
            warm_bytes: warm_chunk_bytes,
            cold_chunks,
            cold_raw_bytes: cold_chunk_bytes,
            blobs,
            blob_raw_bytes,
            blob_stored_bytes,
            warm_disk_bytes: warm_bytes,
        }
    }
}

impl From<ModelStatus> for pb::ModelStatusResponse {
    fn from(status: ModelStatus) -> Self {
        let ModelStatus {
            path,
            installed,
            model_id,
        } = status;
        pb::ModelStatusResponse {
            path: path.display().to_string(),
            installed: installed.map(
                |Installed {
                     model,
                     weights_sha256,
                     source,
                     from,
                     installed_at,
                     bytes,
                 }| pb::InstalledModel {
                    model,
                    weights_sha256,
                    source,
                    from,
                    installed_at,
                    bytes,
                },
            ),
            model_id: model_id.unwrap_or_default(),
        }
    }
}

impl From<pb::ModelStatusResponse> for ModelStatus {
    fn from(r: pb::ModelStatusResponse) -> Self {
        let pb::ModelStatusResponse {
            path,
            installed,
            model_id,
        } = r;
        ModelStatus {
            path: path.into(),
            installed: installed.map(
                |pb::InstalledModel {
                     model,
                     weights_sha256,
                     source,
                     from,
                     installed_at,
                     bytes,
                 }| Installed {
                    model,
                    weights_sha256,
                    source,
                    from,
                    installed_at,
                    bytes,
                },
            ),
            model_id: some(model_id),
        }
    }
}

impl From<CheckReport> for pb::CheckResponse {
    fn from(r: CheckReport) -> Self {
        pb::CheckResponse {
            graph: r.graph,
            archive: r.archive,
            semantic: r.semantic,
            text: r.text,
            problems: r.problems,
            blobs_checked: r.blobs_checked,
            seconds: r.seconds,
        }
    }
}

/// A server's check (never a repair: that needs the store alone).
impl From<pb::CheckResponse> for CheckReport {
    fn from(r: pb::CheckResponse) -> Self {
        CheckReport {
            graph: r.graph,
            archive: r.archive,
            semantic: r.semantic,
            text: r.text,
            problems: r.problems,
            blobs_checked: r.blobs_checked,
            repaired: Vec::new(),
            unrepaired: 0,
            seconds: r.seconds,
        }
    }
}

impl From<BackupReport> for pb::BackupResponse {
    fn from(r: BackupReport) -> Self {
        pb::BackupResponse {
            directory: r.dir,
            sessions: r.manifest.sessions,
            episodes: r.manifest.episodes,
            bytes: r.manifest.bytes,
            created: r.manifest.created,
            seconds: r.seconds,
        }
    }
}

/// A server's backup, on the server's machine.
impl From<pb::BackupResponse> for BackupReport {
    fn from(r: pb::BackupResponse) -> Self {
        BackupReport {
            dir: r.directory,
            manifest: BackupManifest {
                version: String::new(),
                format: 0,
                created: r.created,
                from: String::new(),
                sessions: r.sessions,
                episodes: r.episodes,
                bytes: r.bytes,
            },
            seconds: r.seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let wire = pb::StatsResponse::from(stats.clone());
        assert_eq!(Stats::from(wire), stats);
        let off = crate::engine::SemanticStatus {
            model: None,
            unavailable: Some("no embedding model".to_owned()),
            ..Default::default()
        };
        assert_eq!(
            crate::engine::SemanticStatus::from(pb::Semantic::from(off.clone())),
            off
        );
    }
}
