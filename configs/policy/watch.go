package policy

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch reloads the policy of dir whenever its files change and hands each
// new valid policy to apply. A policy that fails to load, or that apply
// refuses, is reported through refused and the previous one stays in force:
// a bad config never replaces a good one. current is the version already
// applied, so an unchanged directory is not applied twice.
//
// Editors and config-map mounts replace files in ways file events do not
// always show, so a slow poll backs the events up.
func Watch(ctx context.Context, dir, current string, poll time.Duration, apply func(*Policy) error, refused func(error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return err
	}
	const settle = 150 * time.Millisecond // let a burst of writes finish
	var (
		debounce = time.NewTimer(time.Hour)
		ticker   = time.NewTicker(poll)
		lastErr  string
	)
	debounce.Stop()
	defer ticker.Stop()
	reload := func() {
		files, err := ReadDir(dir)
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				refused(err)
			}
			return
		}
		if unchanged(files, current) {
			return
		}
		p, err := Compile(files)
		if err == nil {
			err = apply(p)
		}
		if err != nil {
			// Report a given broken state once, not on every poll.
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				refused(err)
			}
			return
		}
		current, lastErr = p.Version, ""
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("policy watcher closed")
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Remove|fsnotify.Rename) != 0 {
				debounce.Reset(settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("policy watcher closed")
			}
			refused(err)
		case <-debounce.C:
			reload()
		case <-ticker.C:
			if _, err := os.Stat(dir); err == nil {
				reload()
			}
		}
	}
}

// unchanged reports whether files compile to the policy of version
// current, without compiling them: a version hashes the catalog too, and
// a poll that missed it compiled and applied the same policy every time.
func unchanged(files []File, current string) bool {
	return version(withCatalog(files)) == current
}
