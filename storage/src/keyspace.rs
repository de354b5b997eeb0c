//! The keyspaces of a store, primary and index, and what each holds.

/// The keyspaces eywa keeps, one fjall partition each. Primary keyspaces hold values; index keyspaces hold keys
/// only (the value is empty) and are kept consistent with their primary in one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Keyspace {
    /// `node id (16 bytes)` → node.
    Nodes,
    /// `edge id (16 bytes)` → edge.
    Edges,
    /// `doc id (16 bytes)` → document (handoffs, plans, user documents).
    Docs,
    /// `chunk id` → [`crate::ChunkSlot`]: a chunk of a document, warm (inline) or cold (a blob).
    Chunks,
    /// `memory id` → memory.
    Memories,
    /// `name` → setting (format version, counters).
    Settings,
    /// `src id | edge id` → ().
    EdgesBySrc,
    /// `dst id | edge id` → ().
    EdgesByDst,
    /// `node kind tag | normalized name | node id` → ().
    NodesByName,
    /// `start (ordered i64 ms) | episode id` → ().
    EpisodesByTime,
    /// `source path` → fingerprint of the source file as last ingested.
    Sources,
    /// `blob hash (64 lowercase hex characters)` → [`crate::BlobInfo`] of a file in the cold tier.
    Blobs,
    /// Transcript messages across files: `u | message uuid` → the session that first wrote
    /// it (a resumed session replays it), `l | leaf uuid` → the `summary` label given to it.
    Messages,
    /// Embeddings by content: `sha256 of (model id, text)` → the vector as little-endian
    /// f32s. A text is embedded once, whatever document it appears in.
    Embeddings,
    /// Embedded chunks: `vector key (u64)` → what the chunk belongs to (document, session,
    /// project, content type, time) and its content hash.
    Vectors,
    /// Chunks waiting to be embedded, newest first: `inverted time | vector key` → the chunk
    /// and its text.
    EmbedQueue,
    /// `source path | 0 | vector key` → the queue key of a pending chunk, or empty once it
    /// is embedded: what to drop when a source is read again from its start.
    VectorsBySource,
    /// `last activity (ordered i64 ms) | episode id` → () for main sessions (not subagent
    /// runs): the session library's order.
    SessionsByActivity,
}

impl Keyspace {
    /// Every keyspace, in the order their trees are opened.
    pub const ALL: [Keyspace; 18] = [
        Keyspace::Nodes,
        Keyspace::Edges,
        Keyspace::Docs,
        Keyspace::Chunks,
        Keyspace::Memories,
        Keyspace::Settings,
        Keyspace::EdgesBySrc,
        Keyspace::EdgesByDst,
        Keyspace::NodesByName,
        Keyspace::EpisodesByTime,
        Keyspace::Sources,
        Keyspace::Blobs,
        Keyspace::Messages,
        Keyspace::Embeddings,
        Keyspace::Vectors,
        Keyspace::EmbedQueue,
        Keyspace::VectorsBySource,
        Keyspace::SessionsByActivity,
    ];

    /// The partition's name (and the sled tree's, in stores of layouts 1 to 3).
    pub fn name(self) -> &'static str {
        match self {
            Keyspace::Nodes => "nodes",
            Keyspace::Edges => "edges",
            Keyspace::Docs => "docs",
            Keyspace::Chunks => "chunks",
            Keyspace::Memories => "memories",
            Keyspace::Settings => "settings",
            Keyspace::EdgesBySrc => "edges_by_src",
            Keyspace::EdgesByDst => "edges_by_dst",
            Keyspace::NodesByName => "nodes_by_name",
            Keyspace::EpisodesByTime => "episodes_by_time",
            Keyspace::Sources => "sources",
            Keyspace::Blobs => "blobs",
            Keyspace::Messages => "messages",
            Keyspace::Embeddings => "embeddings",
            Keyspace::Vectors => "vectors",
            Keyspace::EmbedQueue => "embed_queue",
            Keyspace::VectorsBySource => "vectors_by_source",
            Keyspace::SessionsByActivity => "sessions_by_activity",
        }
    }

    /// How the partition is created. The `blobs` partition holds zstd frames, which lz4
    /// cannot shrink: compressing its blocks again only costs the flush and compaction
    /// threads time.
    pub(crate) fn create_options(self) -> fjall::PartitionCreateOptions {
        let options = fjall::PartitionCreateOptions::default();
        match self {
            Keyspace::Blobs => options.compression(fjall::CompressionType::None),
            Keyspace::Chunks | Keyspace::EmbedQueue => options.compaction_strategy(
                fjall::compaction::Strategy::SizeTiered(fjall::compaction::SizeTiered::default()),
            ),
            _ => options,
        }
    }

    pub(crate) fn index(self) -> usize {
        Keyspace::ALL
            .iter()
            .position(|k| *k == self)
            .expect("every keyspace is listed in ALL")
    }
}

impl std::fmt::Display for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
