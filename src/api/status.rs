//! Library errors → gRPC statuses, in one place.

use tonic::{Code, Status};

use crate::Error;

/// The one place that maps library errors onto gRPC status codes.
impl From<Error> for Status {
    fn from(error: Error) -> Status {
        let code = match &error {
            Error::InvalidArgument(_) => Code::InvalidArgument,
            Error::NotFound(_) => Code::NotFound,
            Error::ClaudeDirMissing { .. } | Error::FailedPrecondition(_) => {
                Code::FailedPrecondition
            }
            Error::StoreLocked { .. } => Code::Unavailable,
            Error::DiskFull(_) => Code::ResourceExhausted,
            Error::Cancelled => Code::Cancelled,
            Error::Storage(_)
            | Error::Io { .. }
            | Error::Index(_)
            | Error::Embedding(_)
            | Error::VectorIndex(_) => Code::Internal,
        };
        if code == Code::Internal {
            tracing::error!(error = %DisplayChain(&error), "internal error");
        }
        let message = DisplayChain(&error).to_string();
        Status::new(code, crate::error::status_message(&message))
    }
}

/// `INVALID_ARGUMENT` with `message` bounded as every status is (see
/// [`crate::error::status_message`]), for the codecs that refuse a field themselves.
pub(crate) fn invalid(message: String) -> Status {
    Status::invalid_argument(crate::error::status_message(&message))
}

/// `error: cause: cause`, as one line.
struct DisplayChain<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for DisplayChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages() {
        let s = Status::from(Error::InvalidArgument("limit must be positive".into()));
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(s.message(), "limit must be positive");
        let s = Status::from(Error::NotFound("no project named `x`".into()));
        assert_eq!(s.code(), Code::NotFound);
        let s = Status::from(Error::Io {
            path: "/x".into(),
            source: std::io::Error::other("disk on fire"),
        });
        assert_eq!(s.code(), Code::Internal);
        assert_eq!(s.message(), "cannot access `/x`: disk on fire");
    }
}
