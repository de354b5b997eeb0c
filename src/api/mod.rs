//! The gRPC API: the only module that sees generated proto types. Conversions live in
//! `convert` (a file per service), the error → status mapping in `status`, and the
//! services are thin adapters over [`crate::engine::Engine`].

mod client;
mod codec;
mod convert;
mod services;
mod status;

pub use self::client::{Connection, RemoteClient};
pub use self::convert::graph::{NodeQuery, TouchedQuery};
pub use self::services::add_services;

/// Generated types of package `eywa.v1`.
pub mod pb {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("eywa.v1");
}

/// The encoded descriptors of `eywa.v1`, served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("eywa_descriptor");

/// Fully qualified names of the services eywa serves, for health and listings.
pub const SERVICE_NAMES: [&str; 7] = [
    "eywa.v1.Retrieval",
    "eywa.v1.Graph",
    "eywa.v1.Ingest",
    "eywa.v1.Sessions",
    "eywa.v1.Admin",
    "eywa.v1.Memory",
    "eywa.v1.Documents",
];
