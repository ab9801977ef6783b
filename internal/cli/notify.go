package cli

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sync"

	"huddle/notify"
	"huddle/store"
	"huddle/team/view"
	"huddle/tui"
)

// envNotifyURL is --notify-url's default: a URL that carries a token is
// better kept out of the shell's history.
const envNotifyURL = "HUDDLE_NOTIFY_URL"

// notifySynopsis is the notification flags in a usage line.
const notifySynopsis = "[--notify KINDS] [--notify-url URL [--notify-json]]"

// notifyAbout is what the help of a command that takes them says of them.
const notifyAbout = "A person is told of each plan and permission that waits for the lead and each crash,\n" +
	"once, besides the screen: the terminal's own notification (OSC 9 and 777) and bell, the\n" +
	"desktop's (notify-send, in a desktop session) and, with --notify-url, a POST to a\n" +
	"webhook (ntfy's plain text with Title and Tags headers, or --notify-json) carrying the\n" +
	"member, the kind, its first line and the command that shows it. --notify off: none."

// notifyOpts are the flags of the commands that watch a team for a
// person: up, attach and desk.
type notifyOpts struct {
	kinds, url string
	json       bool
}

func addNotifyFlags(fs *flag.FlagSet) *notifyOpts {
	o := &notifyOpts{}
	fs.StringVar(&o.kinds, "notify", "all", "what to be told of, each once, besides the screen: `KINDS` of plan, permission and crash, comma-separated, or all or off")
	fs.StringVar(&o.url, "notify-url", "", "also POST each to this `URL`, as ntfy reads it (default $"+envNotifyURL+"; off by default)")
	fs.BoolVar(&o.json, "notify-json", false, "with --notify-url: post a JSON object (team, kind, member, id, line, show, at, title) instead")
	return o
}

// resolve reads the flags: the kinds, and the channels besides the
// terminal (notify-send where a desktop session is, the webhook when
// asked for). A bad kind or URL is a usage error, its URL redacted.
func (o *notifyOpts) resolve(cl *cmdline) (tui.Notify, int, bool) {
	kinds, err := notify.ParseKinds(o.kinds)
	if err != nil {
		return tui.Notify{}, cl.usageError("--notify: %v", err), false
	}
	n := tui.Notify{Kinds: kinds}
	if len(kinds) == 0 {
		return n, 0, true
	}
	if d, ok := notify.FindDesktop(); ok && (os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" || os.Getenv("WAYLAND_DISPLAY") != "" || os.Getenv("DISPLAY") != "") {
		n.Channels = append(n.Channels, d)
	}
	hook := o.url
	if hook == "" && !cl.flagGiven("notify-url") {
		hook = os.Getenv(envNotifyURL)
	}
	if o.json && hook == "" {
		return tui.Notify{}, cl.usageError("--notify-json goes with --notify-url (or $%s)", envNotifyURL), false
	}
	if hook != "" {
		u, err := url.Parse(hook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return tui.Notify{}, cl.usageError("--notify-url %s: want an http:// or https:// URL", notify.Redact(hook)), false
		}
		cl.secrets = append(cl.secrets, hook)
		n.Channels = append(n.Channels, notify.Webhook{URL: hook, JSON: o.json})
	}
	return n, 0, true
}

// notifyHeadless tells n's channels of what the team in st needs, from an
// observer of its own, for huddle up --headless (the UI does it
// otherwise); warn hears a channel's failures. The returned func stops it.
func notifyHeadless(ctx context.Context, st store.Store, n tui.Notify, warn func(string)) (func(), error) {
	if len(n.Channels) == 0 {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	sender := notify.Start(ctx, n.Channels, warn)
	w := notify.NewWatcher(n.Kinds)
	// Only the newest snapshot matters: what still waits is in it, and
	// what was decided meanwhile needs nobody.
	var mu sync.Mutex
	var latest *view.Snapshot
	kick := make(chan struct{}, 1)
	o, err := view.Observe(ctx, st, view.ObserveOptions{}, func(s view.Snapshot) {
		mu.Lock()
		latest = &s
		mu.Unlock()
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	if err != nil {
		cancel()
		sender.Close()
		return nil, fmt.Errorf("notifications: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
				mu.Lock()
				s := latest
				mu.Unlock()
				for _, e := range w.New(*s) {
					sender.Notify(e)
				}
			}
		}
	}()
	return func() {
		cancel()
		o.Close()
		<-done
		sender.Close()
	}, nil
}
