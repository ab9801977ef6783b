package full

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"

	"huddle/internal/cli"
	"huddle/notify"
	"huddle/store"
	"huddle/team/view"
	"huddle/tui"
)

// resolve reads the flags: the kinds, and the channels besides the
// terminal (notify-send where a desktop session is, the webhook when
// asked for). A bad kind or URL is a usage error, its URL redacted.
func resolveNotify(cl *cli.Cmdline, o *cli.NotifyFlags) (tui.Notify, int, bool) {
	kinds, err := notify.ParseKinds(o.Kinds)
	if err != nil {
		return tui.Notify{}, cl.UsageError("--notify: %v", err), false
	}
	n := tui.Notify{Kinds: kinds}
	if len(kinds) == 0 {
		return n, 0, true
	}
	if d, ok := notify.FindDesktop(); ok && (os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" || os.Getenv("WAYLAND_DISPLAY") != "" || os.Getenv("DISPLAY") != "") {
		n.Channels = append(n.Channels, d)
	}
	hook := o.URL
	if hook == "" && !cl.FlagGiven("notify-url") {
		hook = os.Getenv(cli.EnvNotifyURL)
	}
	if o.JSON && hook == "" {
		return tui.Notify{}, cl.UsageError("--notify-json goes with --notify-url (or $%s)", cli.EnvNotifyURL), false
	}
	if hook != "" {
		u, err := url.Parse(hook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return tui.Notify{}, cl.UsageError("--notify-url %s: want an http:// or https:// URL", notify.Redact(hook)), false
		}
		cl.AddSecret(hook)
		n.Channels = append(n.Channels, notify.Webhook{URL: hook, JSON: o.JSON})
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
