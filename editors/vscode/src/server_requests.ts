// Requests the server makes of a plugin client: save exactly the documents it names, and report
// the editor's diagnostics.

import * as vscode from 'vscode';
import type { DiagnosticsParams, DiagnosticsResult, SaveDocumentsParams, WireDiagnostic } from './lsp_ext';

export async function saveDocuments(params: SaveDocumentsParams): Promise<{ saved: string[] }> {
  const wanted = new Set(params.uris.map((u) => vscode.Uri.parse(u).toString()));
  const saved: string[] = [];
  for (const doc of vscode.workspace.textDocuments) {
    const key = doc.uri.toString();
    if (!wanted.has(key)) continue;
    if (!doc.isDirty || (await doc.save())) saved.push(key);
  }
  return { saved };
}

const SEVERITY: Record<vscode.DiagnosticSeverity, number> = {
  [vscode.DiagnosticSeverity.Error]: 1,
  [vscode.DiagnosticSeverity.Warning]: 2,
  [vscode.DiagnosticSeverity.Information]: 3,
  [vscode.DiagnosticSeverity.Hint]: 4,
};

function toWire(d: vscode.Diagnostic): WireDiagnostic {
  const code = typeof d.code === 'object' ? d.code.value : d.code;
  return {
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
    severity: SEVERITY[d.severity],
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
    ...(code !== undefined ? { code } : {}),
  };
}

export function diagnostics(params: DiagnosticsParams): DiagnosticsResult {
  if (params.uri) {
    const uri = vscode.Uri.parse(params.uri);
    return { files: [{ uri: params.uri, diagnostics: vscode.languages.getDiagnostics(uri).map(toWire) }] };
  }
  return {
    files: vscode.languages
      .getDiagnostics()
      .filter(([uri, ds]) => uri.scheme === 'file' && ds.length > 0)
      .map(([uri, ds]) => ({ uri: uri.toString(), diagnostics: ds.map(toWire) })),
  };
}
