//! What the connected client can do, read once from `initialize` and never guessed later.
//!
//! Invariant: every editor-facing decision (plugin flow or plain-LSP fallback, `documentChanges`
//! or `changes`, change annotations, progress, showDocument, dynamic file watching, position
//! encoding) is taken from this record, so a client gets only what it announced.

use tower_lsp_server::ls_types::{
    ClientCapabilities, InitializeParams, PositionEncodingKind, ResourceOperationKind,
};

use crate::workspace::position::PositionEncoding;

/// Picks the position encoding from what the client offers: UTF-8 when offered, UTF-16 when
/// offered or nothing is (the protocol default), UTF-32 when it is the only thing offered.
pub fn negotiate_encoding(offered: Option<&[PositionEncodingKind]>) -> PositionEncoding {
    let Some(offered) = offered.filter(|o| !o.is_empty()) else { return PositionEncoding::Utf16 };
    let has = |kind: &PositionEncodingKind| offered.iter().any(|o| o == kind);
    if has(&PositionEncodingKind::UTF8) {
        PositionEncoding::Utf8
    } else if !has(&PositionEncodingKind::UTF16) && has(&PositionEncodingKind::UTF32) {
        PositionEncoding::Utf32
    } else {
        PositionEncoding::Utf16
    }
}

/// The client features the server adapts to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientProfile {
    /// `capabilities.experimental.agentls` was announced: the client runs our plugin and
    /// understands `agentls/*` notifications and requests.
    pub plugin: bool,
    pub encoding: PositionEncoding,
    /// `workspace.workspaceEdit.documentChanges`.
    pub document_changes: bool,
    pub create_files: bool,
    pub rename_files: bool,
    pub delete_files: bool,
    /// `workspace.workspaceEdit.changeAnnotationSupport`: needsConfirmation edits are honoured.
    pub change_annotations: bool,
    /// `window.workDoneProgress`.
    pub work_done_progress: bool,
    /// `window.showDocument.support`.
    pub show_document: bool,
    /// `workspace.didChangeWatchedFiles.dynamicRegistration`.
    pub watch_files_dynamically: bool,
    /// `workspace.configuration`.
    pub configuration: bool,
    /// `workspace.applyEdit`.
    pub apply_edit: bool,
    /// `experimental.agentls.trust`: the plugin resolves workspace trust itself (its editor's
    /// trust store or its own question) when told `agentls/trustRequired`; other clients are
    /// asked with `window/showMessageRequest`.
    pub trust: bool,
    /// `experimental.agentls.deltaIntervalMs`: the plugin asks for at most one text, reasoning
    /// or output delta per this interval (and session); the deltas in between are merged.
    pub delta_interval: std::time::Duration,
    /// Client name from `clientInfo`, for logs.
    pub name: String,
}

impl ClientProfile {
    pub fn from_initialize(params: &InitializeParams) -> Self {
        let caps: &ClientCapabilities = &params.capabilities;
        let extension = caps.experimental.as_ref().and_then(|e| e.get("agentls"));
        let plugin = extension.is_some_and(|v| !v.is_null() && v != &serde_json::Value::Bool(false));
        // At most a second: the interval is a pace, not a way to stop the stream.
        let delta_interval_ms = extension
            .and_then(|v| v.get("deltaIntervalMs"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
            .min(1000);
        let encoding =
            negotiate_encoding(caps.general.as_ref().and_then(|g| g.position_encodings.as_deref()));
        let workspace = caps.workspace.as_ref();
        let edit = workspace.and_then(|w| w.workspace_edit.as_ref());
        let resource_ops = edit.and_then(|e| e.resource_operations.clone()).unwrap_or_default();
        let window = caps.window.as_ref();
        let apply_edit = workspace.and_then(|w| w.apply_edit).unwrap_or(false);
        Self {
            plugin,
            encoding,
            // Workspace-edit features mean nothing to a client that takes no workspace edits.
            document_changes: apply_edit && edit.and_then(|e| e.document_changes).unwrap_or(false),
            create_files: resource_ops.contains(&ResourceOperationKind::Create),
            rename_files: resource_ops.contains(&ResourceOperationKind::Rename),
            delete_files: resource_ops.contains(&ResourceOperationKind::Delete),
            change_annotations: edit.and_then(|e| e.change_annotation_support.as_ref()).is_some(),
            work_done_progress: window.and_then(|w| w.work_done_progress).unwrap_or(false),
            show_document: window.and_then(|w| w.show_document.as_ref()).is_some_and(|s| s.support),
            watch_files_dynamically: workspace
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
            configuration: workspace.and_then(|w| w.configuration).unwrap_or(false),
            apply_edit,
            trust: plugin
                && extension.and_then(|v| v.get("trust")).and_then(serde_json::Value::as_bool) == Some(true),
            delta_interval: std::time::Duration::from_millis(delta_interval_ms),
            name: params.client_info.as_ref().map(|c| c.name.clone()).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_prefers_utf8_then_the_utf16_default() {
        use PositionEncodingKind as K;
        assert_eq!(negotiate_encoding(None), PositionEncoding::Utf16);
        assert_eq!(negotiate_encoding(Some(&[])), PositionEncoding::Utf16);
        assert_eq!(negotiate_encoding(Some(&[K::UTF16, K::UTF8])), PositionEncoding::Utf8);
        assert_eq!(negotiate_encoding(Some(&[K::UTF32, K::UTF16])), PositionEncoding::Utf16);
        assert_eq!(negotiate_encoding(Some(&[K::UTF32])), PositionEncoding::Utf32);
        assert_eq!(negotiate_encoding(Some(&[K::new("utf-7")])), PositionEncoding::Utf16);
    }

    #[test]
    fn plugin_is_detected_from_experimental_capability() {
        let params: InitializeParams = serde_json::from_value(serde_json::json!({
            "capabilities": {
                "experimental": {"agentls": {"version": 1}},
                "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true, "resourceOperations": ["create", "delete"]}},
            }
        }))
        .expect("valid params");
        let profile = ClientProfile::from_initialize(&params);
        assert!(profile.plugin && !profile.trust);
        assert!(profile.document_changes && profile.create_files && profile.delete_files);
        assert!(!profile.rename_files && !profile.change_annotations);
    }

    #[test]
    fn without_apply_edit_workspace_edit_features_do_not_count() {
        let params: InitializeParams = serde_json::from_value(serde_json::json!({
            "capabilities": {"workspace": {"workspaceEdit": {"documentChanges": true}}}
        }))
        .expect("valid params");
        let profile = ClientProfile::from_initialize(&params);
        assert!(!profile.apply_edit && !profile.document_changes);
    }
}
