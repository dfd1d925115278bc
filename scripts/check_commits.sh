#!/usr/bin/env bash
# Commit subjects of at most 72 characters, a blank line before the body (docs/contributing.md).
#   scripts/check_commits.sh              every commit since the rule began (CI)
#   scripts/check_commits.sh --message F  one message file (the pre-commit commit-msg hook)
# Older commits are not judged: the rule began at RULE_SINCE. A shallow clone that lacks it has only
# younger commits, and all of them are judged.
set -euo pipefail
cd "$(dirname "$0")/.."
RULE_SINCE=e5a8714
MAX=72
check() {  # check SUBJECT SECOND_LINE WHERE
    local bad=0
    if [ "${#1}" -gt "$MAX" ]; then
        echo "$3: the subject is ${#1} characters (at most $MAX): $1" >&2; bad=1
    fi
    if [ -n "$2" ]; then
        echo "$3: put a blank line between the subject and the body" >&2; bad=1
    fi
    return "$bad"
}
if [ "${1:-}" = --message ]; then
    subject="$(sed -n '1p' "$2")" second="$(sed -n '2p' "$2" | grep -v '^#' || true)"
    check "$subject" "$second" "commit message" || { echo "(the message is kept in $2)" >&2; exit 1; }
    exit 0
fi
range="$RULE_SINCE..HEAD"
if ! git cat-file -e "$RULE_SINCE^{commit}" 2>/dev/null; then
    # A shallow clone stops before the rule began: every commit it has is younger than RULE_SINCE, so
    # all of them are judged. A full clone without it is another history, which this rule cannot place.
    if [ "$(git rev-parse --is-shallow-repository)" != true ]; then
        echo "commit subjects: $RULE_SINCE is not in this history and the clone is not shallow;" \
             "run this in a clone of the project (git fetch --unshallow if it was cut)" >&2
        exit 1
    fi
    range=HEAD
    echo "commit subjects: shallow clone without $RULE_SINCE; judging the $(git rev-list --count HEAD) commits it has"
fi
failed=0 count=0
while IFS= read -r sha; do
    count=$((count + 1))
    subject="$(git log -1 --format=%s "$sha")"
    second="$(git log -1 --format=%B "$sha" | sed -n '2p')"
    check "$subject" "$second" "commit ${sha:0:10}" || failed=1
done < <(git rev-list --no-merges "$range")
[ "$failed" = 0 ] && echo "commit subjects: $count commits ($range) keep to $MAX characters"
exit "$failed"
