//! The editor port of headless runs (`agentls exec`, `agentls tool`): change sets go straight to
//! the environment's files through the [`DiskCommitter`] under approval `auto` (or `review`, which
//! has no reviewer here) and are refused under `deny`.
//! A permission question reaches it only after the permission policy (`crate::policy`) chose to
//! ask: `agentls tool` runs what its user typed, so it allows unless the run denies edits;
//! `agentls exec` puts its terminal port in front instead.
//! Invariant: the files are the truth, so saving is a no-op.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use super::change::FileOutcome;
use super::commit::{ChangeOutcome, Committer, DiskCommitter};
use super::{ChangeSet, EditorPort, PermissionDecision, PermissionRequest, PortError};
use crate::config::Approval;
use crate::exec::ExecutionEnvironment;

pub struct DiskPort {
    committer: Arc<dyn Committer>,
    approval: Approval,
}

impl DiskPort {
    /// A port that commits to the files of `env`.
    pub fn new(env: Arc<dyn ExecutionEnvironment>, approval: Approval) -> Self {
        Self::with_committer(Arc::new(DiskCommitter::new(env)), approval)
    }

    pub fn with_committer(committer: Arc<dyn Committer>, approval: Approval) -> Self {
        Self { committer, approval }
    }
}

#[async_trait]
impl EditorPort for DiskPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        if self.approval == Approval::Deny {
            let resolved = change.reject_all();
            let files = resolved.files.iter().map(FileOutcome::rejected).collect();
            return Ok(ChangeOutcome {
                files,
                feedback: None,
                error: Some(
                    "Edits are not allowed in this run (approval: deny); nothing was changed.".into(),
                ),
            });
        }
        match self.committer.commit(change.accept_all()).await {
            Ok(files) => Ok(ChangeOutcome { files, feedback: None, error: None }),
            Err(error) => Ok(ChangeOutcome::failed(error.to_string())),
        }
    }

    async fn ask_permission(&self, _request: PermissionRequest) -> PermissionDecision {
        match self.approval {
            Approval::Deny => PermissionDecision::Deny {
                feedback: Some("Commands are not allowed in this run (approval: deny).".into()),
            },
            Approval::Auto | Approval::Review => PermissionDecision::AllowOnce,
        }
    }

    async fn save(&self, _paths: &[PathBuf]) -> Result<(), PortError> {
        Ok(())
    }
}
