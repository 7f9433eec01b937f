# Sourced by the fetch scripts: what they share about a model file that must match its SHA-256.
# A truncated or substituted file never reaches the loader: it is written beside its place
# (DEST.partial), checked, and only then moved into place.

# model_ready DEST SHA256: true when DEST exists and matches.
model_ready() {
  [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status
}

# model_install DEST SHA256: checks DEST.partial and moves it to DEST, or removes it and fails.
model_install() {
  if ! echo "$2  $1.partial" | sha256sum --check --status; then
    echo "model checksum mismatch: expected $2" >&2
    rm -f "$1.partial"
    exit 1
  fi
  mv "$1.partial" "$1"
  echo "model ready: $1" >&2
}
