;;; init.el --- a user's Emacs 28 + eglot 1.9 configuration for agentls (docs/editors.md shows it)
;; The suite passes the binary and the initializationOptions through the environment.

(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-activate-all)
(require 'eglot)
(require 'json)

(let ((options (json-parse-string (or (getenv "AGENTLS_PLAIN_OPTIONS") "{}")
                                  :object-type 'plist :false-object :json-false)))
  (add-to-list 'eglot-server-programs
               `((python-mode text-mode)
                 . (,(or (getenv "AGENTLS_PLAIN_BIN") "agentls") "serve" "--stdio"
                    :initializationOptions ,options))))
;; eglot 1.9 otherwise asks before every edit the server sends; agentls asks itself.
(setq eglot-confirm-server-initiated-edits nil)
(add-hook 'python-mode-hook #'eglot-ensure)
