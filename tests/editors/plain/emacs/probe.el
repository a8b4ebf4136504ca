;;; probe.el --- the suite's eyes inside a real interactive Emacs -*- lexical-binding: t -*-
;; Nothing here changes how eglot talks to the server: the suite types like a user (tmux
;; send-keys) and reads what Emacs shows through `agentls-probe-dump', called with emacsclient.

(require 'server)
(require 'json)

(defvar agentls-probe--start (float-time))
(defvar agentls-probe--prompts nil
  "Minibuffer prompts opened, newest first: (PROMPT OPENED ANSWERED CHOICES).")

(defun agentls-probe--ms () (round (* 1000 (- (float-time) agentls-probe--start))))

(add-hook 'minibuffer-setup-hook
          (lambda ()
            (push (list (minibuffer-prompt) (agentls-probe--ms) nil
                        (and (listp minibuffer-completion-table)
                             (all-completions "" minibuffer-completion-table)))
                  agentls-probe--prompts)))
(add-hook 'minibuffer-exit-hook
          (lambda ()
            (let ((open (seq-find (lambda (p) (null (nth 2 p))) agentls-probe--prompts)))
              (when open (setf (nth 2 open) (agentls-probe--ms))))))

(defun agentls-probe--buffers ()
  (let (out)
    (dolist (buffer (buffer-list) out)
      (with-current-buffer buffer
        (when buffer-file-name
          (push (cons buffer-file-name
                      (list :text (buffer-substring-no-properties (point-min) (point-max))
                            :modified (if (buffer-modified-p) t :json-false)
                            :modtime_ok (if (verify-visited-file-modtime buffer) t :json-false)
                            :eglot (if (and (fboundp 'eglot-current-server) (eglot-current-server)) t :json-false)))
                out))))))

(defun agentls-probe-dump (file)
  "Writes what the user can see to FILE as JSON."
  (let ((state
         (list :now_ms (agentls-probe--ms)
               :prompts (vconcat (mapcar (lambda (p) (list :message (nth 0 p) :opened_ms (nth 1 p)
                                                             :answered_ms (nth 2 p)
                                                             :titles (vconcat (nth 3 p))))
                                         (reverse agentls-probe--prompts)))
               :minibuffer (if (active-minibuffer-window)
                               (with-current-buffer (window-buffer (active-minibuffer-window))
                                 (list :prompt (minibuffer-prompt) :contents (minibuffer-contents-no-properties)))
                             nil)
               :messages (with-current-buffer (messages-buffer) (buffer-substring-no-properties (point-min) (point-max)))
               :buffers (let ((table (make-hash-table :test 'equal)))
                          (dolist (entry (agentls-probe--buffers) table)
                            (puthash (car entry) (cdr entry) table)))
               :buffer_names (vconcat (mapcar #'buffer-name (buffer-list)))
               :current (or (buffer-file-name (window-buffer (selected-window))) nil))))
    (with-temp-file file
      (insert (json-encode state))))
  t)

(defun agentls-probe-insert (file after-line text)
  "Inserts TEXT as the user would, after line AFTER-LINE of FILE's buffer (not saved)."
  (with-current-buffer (find-buffer-visiting file)
    (save-excursion
      (goto-char (point-min))
      (forward-line after-line)
      (insert text)))
  t)

(setq server-socket-dir (getenv "AGENTLS_PLAIN_EMACS_SOCKET_DIR"))
(setq server-name "probe")
(server-start)

(defun agentls-probe-save-events (file)
  "Writes eglot's events buffer (the JSON-RPC traffic as eglot saw it) to FILE."
  (let ((events (seq-find (lambda (b) (string-match-p "\\`\\*EGLOT .* events\\*\\'" (buffer-name b))) (buffer-list))))
    (when events
      (with-current-buffer events
        (write-region (point-min) (point-max) file nil 'silent))))
  t)

(defun agentls-probe-select-lines (file first last)
  "Selects lines FIRST..LAST of FILE's buffer as a user would with C-SPC and motion: the region
ends at the start of line LAST + 1."
  (with-current-buffer (find-buffer-visiting file)
    (goto-char (point-min))
    (forward-line (1- first))
    (push-mark (point) t t)
    (forward-line (1+ (- last first))))
  t)
