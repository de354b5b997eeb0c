//! Integration tests, compiled as one binary.

mod support;

mod archive;
mod cli;
mod corpus;
mod crash;
mod grpc;
mod ingest;
mod temporal;
mod view;
mod walks;
