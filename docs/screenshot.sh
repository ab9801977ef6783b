#!/usr/bin/env bash
# docs/screenshot.sh writes docs/screen.png, the README's picture, from a real
# session: huddle with no arguments in an empty directory plays the demo team;
# it runs in a 120x36 tmux window, is captured (with its colours) once two
# plans wait for the lead and the footer offers `a`, and charmbracelet/freeze
# renders the capture. Run it by hand (`make screenshot`); no test runs it.
#
# Needs: Go, tmux, rsvg-convert (librsvg2-bin; freeze uses it for the PNG,
# and through fontconfig it finds a system font for every glyph) and a
# monospace font with the UI's glyphs (◐ ⚑ ✓ ⇄): FONT, default DejaVu Sans Mono.
# With ImageMagick the image is halved, to about 2,100 pixels wide.
set -euo pipefail
cd "$(dirname "$0")/.."

FREEZE=(go run github.com/charmbracelet/freeze@v0.2.2)
FONT=${FONT:-DejaVu Sans Mono}
OUT=${OUT:-docs/screen.png}
for tool in tmux rsvg-convert; do
	command -v $tool >/dev/null || { echo "screenshot: needs $tool" >&2; exit 1; }
done

work=$(mktemp -d)
session=huddle-shot-$$
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT

CGO_ENABLED=0 go build -o "$work/" . ./cmd/huddle-full
mkdir "$work/empty"
tmux new-session -d -s "$session" -x 120 -y 36 -c "$work/empty" "$work/huddle"

# The demo asks for two approvals within seconds; the footer offers a and r
# 400 ms after the request on screen arrived.
for _ in $(seq 1 150); do
	screen=$(tmux capture-pane -p -t "$session")
	if grep -q '2 pending' <<<"$screen" && grep -q 'a approve' <<<"$screen"; then
		break
	fi
	sleep 0.2
done
grep -q '2 pending' <<<"$screen" || { echo "screenshot: the demo never showed 2 pending" >&2; exit 1; }

# freeze v0.2.2 ignores the default-colour codes (39, 49), so they are
# spelled out as its theme's foreground and background.
tmux capture-pane -e -p -t "$session" |
	sed -e 's/\x1b\[39m/\x1b[38;2;196;196;196m/g' -e 's/\x1b\[49m/\x1b[48;2;23;23;23m/g' >"$work/screen.ansi"

"${FREEZE[@]}" --language ansi --font.family "$FONT" --padding 20 --margin 0 \
	-o "$work/screen.png" <"$work/screen.ansi"

magick=
for c in magick convert /usr/bin/convert; do
	if "$c" -version 2>/dev/null | grep -q ImageMagick; then magick=$c && break; fi
done
if [ -n "$magick" ]; then
	"$magick" "$work/screen.png" -resize 50% -strip "$OUT"
else
	cp "$work/screen.png" "$OUT"
fi
echo "screenshot: wrote $OUT"
