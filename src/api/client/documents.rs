//! The documents service's calls, in domain types.

use super::RemoteClient;
use crate::api::convert::documents::{AddQuery, DocumentListQuery, DocumentQuery, FollowQuery};
use crate::api::pb;

impl RemoteClient {
    /// Has the server add files and folders (paths on its machine) as documents.
    pub async fn add_documents(
        &mut self,
        paths: &[String],
        project: Option<&str>,
    ) -> Result<Vec<crate::engine::DocumentOutcome>, tonic::Status> {
        let request = pb::AddDocumentRequest::from(AddQuery {
            paths: paths.to_vec(),
            project: project.map(str::to_owned),
        });
        let pb::AddDocumentResponse { outcomes } =
            self.documents.add_document(request).await?.into_inner();
        outcomes.into_iter().map(TryInto::try_into).collect()
    }

    /// A document's version with its text.
    pub async fn document(
        &mut self,
        document: &str,
        version: Option<u32>,
        as_of: Option<crate::model::Timestamp>,
    ) -> Result<crate::docs::DocumentText, tonic::Status> {
        let request = pb::GetDocumentRequest::from(DocumentQuery {
            document: document.to_owned(),
            version,
            as_of,
        });
        self.documents
            .get_document(request)
            .await?
            .into_inner()
            .try_into()
    }

    /// A page of the server's documents, and how many there are.
    pub async fn list_documents(
        &mut self,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<crate::docs::DocumentInfo>, u64), tonic::Status> {
        let request = pb::ListDocumentsRequest::from(DocumentListQuery {
            limit,
            offset,
            failed: false,
        });
        let pb::ListDocumentsResponse {
            documents,
            total,
            failed: _,
        } = self.documents.list_documents(request).await?.into_inner();
        let documents = documents
            .into_iter()
            .map(TryInto::try_into)
            .collect::<Result<_, _>>()?;
        Ok((documents, total))
    }

    /// A page of the files the server could not read as documents, most recent first,
    /// and how many there are.
    pub async fn failed_documents(
        &mut self,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<crate::docs::FailedDocument>, u64), tonic::Status> {
        let request = pb::ListDocumentsRequest::from(DocumentListQuery {
            limit,
            offset,
            failed: true,
        });
        let pb::ListDocumentsResponse {
            documents: _,
            total,
            failed,
        } = self.documents.list_documents(request).await?.into_inner();
        let failed = failed
            .into_iter()
            .map(TryInto::try_into)
            .collect::<Result<_, _>>()?;
        Ok((failed, total))
    }

    /// Every version of a document, oldest first.
    pub async fn document_history(
        &mut self,
        document: &str,
    ) -> Result<Vec<crate::docs::DocumentInfo>, tonic::Status> {
        let request = pb::DocumentHistoryRequest {
            document: document.to_owned(),
        };
        let pb::DocumentHistoryResponse { versions } =
            self.documents.document_history(request).await?.into_inner();
        versions.into_iter().map(TryInto::try_into).collect()
    }

    /// Has the server follow folders (or stop, with `stop`); what adding them did, and the
    /// folders followed after.
    pub async fn follow_folders(
        &mut self,
        paths: &[String],
        project: Option<&str>,
        stop: bool,
    ) -> Result<crate::engine::Followed, tonic::Status> {
        let request = pb::FollowFoldersRequest::from(FollowQuery {
            paths: paths.to_vec(),
            project: project.map(str::to_owned),
            stop,
        });
        crate::engine::Followed::try_from(
            self.documents.follow_folders(request).await?.into_inner(),
        )
    }
}
