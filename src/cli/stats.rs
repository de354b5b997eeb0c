//! `eywa stats`: counts, tier sizes and cache hit rates.

use std::process::ExitCode;

use serde_json::json;

use crate::app::Paths;
use crate::app::client::Client;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let s = Client::connect(paths)?.stats()?;
    let t = &s.tiers;
    if args.json {
        let caches: Vec<_> = s
            .caches
            .iter()
            .map(|c| {
                json!({"name": c.name, "capacity": c.capacity, "len": c.len, "hits": c.hits,
                       "misses": c.misses, "evictions": c.evictions, "hit_rate": c.hit_rate()})
            })
            .collect();
        crate::app::print_json(&json!({
            "counts": s.counts,
            "nodes_by_kind": s.kinds,
            "edges_by_relation": s.relations,
            "tiers": {
                "warm_disk_bytes": t.warm_disk_bytes, "warm_chunks": t.warm_chunks,
                "warm_chunk_bytes": t.warm_bytes, "cold_chunks": t.cold_chunks,
                "cold_chunk_bytes": t.cold_raw_bytes, "blobs": t.blobs,
                "blob_raw_bytes": t.blob_raw_bytes, "blob_stored_bytes": t.blob_stored_bytes,
                "compression_ratio": t.compression_ratio(),
            },
            "caches": caches,
            "semantic": s.semantic,
            "failed_documents": {
                "count": s.failed_document_count,
                "latest": s.failed_documents.iter().map(super::docs::failed_json).collect::<Vec<_>>(),
            },
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let c = &s.counts;
    outln!(
        "{} sessions, {} episodes, {} entities, {} current edges, {} skipped lines",
        c.sessions,
        c.episodes,
        c.entities,
        c.edges,
        c.skipped_lines
    );
    let join = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!("nodes: {}", join(&s.kinds));
    outln!("edges: {}", join(&s.relations));
    outln!(
        "warm:  {} on disk; {} chunks, {}",
        mib(t.warm_disk_bytes),
        t.warm_chunks,
        mib(t.warm_bytes)
    );
    outln!(
        "cold:  {} blobs, {} stored for {} raw ({:.1}x); {} chunks",
        t.blobs,
        mib(t.blob_stored_bytes),
        mib(t.blob_raw_bytes),
        t.compression_ratio(),
        t.cold_chunks
    );
    let sem = &s.semantic;
    match &sem.unavailable {
        None if sem.model.is_some() => outln!(
            "semantic: {} vectors, {} chunks waiting to be embedded{} ({})",
            sem.vectors,
            sem.backlog,
            if sem.rebuilding {
                ", index rebuilding"
            } else {
                ""
            },
            sem.model.as_deref().unwrap_or_default()
        ),
        why => outln!(
            "semantic: unavailable ({}); {} chunks waiting to be embedded",
            why.as_deref().unwrap_or("no model"),
            sem.backlog
        ),
    }
    for cache in &s.caches {
        outln!(
            "hot:   {:<12} {}/{} entries, hit rate {:.1}% ({} hits, {} misses)",
            cache.name,
            cache.len,
            cache.capacity,
            cache.hit_rate() * 100.0,
            cache.hits,
            cache.misses
        );
    }
    if s.failed_document_count > 0 {
        outln!(
            "documents: {} files could not be read (eywa docs list --failed lists them all):",
            s.failed_document_count
        );
        for f in &s.failed_documents {
            outln!("  {}  {}: {}", f.failed_at.to_rfc3339(), f.path, f.reason);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
