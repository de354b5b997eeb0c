//! Integration tests, compiled as one binary.

mod support;

mod cli;
mod corpus;
mod grpc;
mod ingest;
