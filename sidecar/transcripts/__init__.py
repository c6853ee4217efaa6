"""Real transcripts: the session logs coding agents write (Claude Code, Codex, pi, OpenCode),
read into one model (:mod:`sidecar.transcripts.model`) that ``import`` stores as a session and
``replay`` prices request by request."""
