#!/bin/sh
# Mirror a real documentation site from loopback and compare with wget.
#   sh bench/mirror_docs.sh [DOCS_DIR] [WORK_DIR]
# Needs wget. Run from the worktree (uses PYTHONPATH=$PWD).
set -eu
DOCS=${1:-/usr/share/doc/python3.11/html}
WORK=${2:-$(mktemp -d)}
ROOT=$PWD
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cd "$WORK"
rm -rf wget ws ws0
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 -d "$DOCS" >server.log 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
sleep 1
URL=http://127.0.0.1:$PORT/

t() { start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "  $(echo "$end - $start" | bc) s"; }
crawl() { (cd "$ROOT" && PYTHONPATH=$ROOT scrapy crawl webspider -a start_urls=$URL -s LOG_LEVEL=INFO "$@" 2>&1 \
  | grep -E "'(downloader/response_bytes|webspider/mirror/[a-z_/]+|webspider/skip_bodies/stopped_count)'" || true); }

echo "wget --mirror --page-requisites --no-parent:"
t wget -q --mirror --page-requisites --no-parent -P wget "$URL" || true
echo "  files: $(find wget -type f | wc -l)"
echo "webspider, mirror=0:"
t crawl -a output=$WORK/ws0 -a mirror=0
echo "webspider, first crawl into the mirror:"
t crawl -a output=$WORK/ws
echo "  files: $(find ws/mirror -type f | wc -l)"
python3 "$ROOT/bench/check_mirror.py" "ws/mirror/127.0.0.1_$PORT" "wget/127.0.0.1:$PORT" | tail -3
find ws/mirror -type f -printf '%i %T@ %p\n' | sort >before.txt
echo "webspider, second crawl (update):"
t crawl -a output=$WORK/ws
find ws/mirror -type f -printf '%i %T@ %p\n' | sort >after.txt
echo "  files rewritten: $(diff before.txt after.txt | grep -c '^>' || true)"
python3 -c "import json,collections,sys; print('  changes:', dict(collections.Counter(json.loads(l)['change'] for l in open('ws/changes.jsonl'))))"
