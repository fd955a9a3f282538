package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressDelay is how long a transfer runs before its bar appears: short
// transfers print nothing. A variable for the tests.
var progressDelay = 500 * time.Millisecond

// progress draws a progress bar for one transfer, or the files of a tree
// (cp -r), on stderr, redrawn every 200 ms, from progressDelay on.
type progress struct {
	out   io.Writer
	name  string
	total int64 // bytes; -1: unknown
	done  atomic.Int64
	// A tree's bar counts its files too.
	tree       bool
	filesTotal int64
	files      atomic.Int64
	start      time.Time
	stop       chan struct{}
	wg         sync.WaitGroup
	drawn      bool
}

// newProgress starts a bar for name (total bytes, -1 if unknown); it is
// inert when progress bars are off.
func (s *session) newProgress(name string, total int64) *progress {
	return s.newProgressSince(name, total, time.Now())
}

// newTreeProgress starts a bar for the copy of a tree to name: files
// regular files of bytes bytes in all.
func (s *session) newTreeProgress(name string, files, bytes int64) *progress {
	p := &progress{out: s.stderr, name: name, total: bytes, tree: true, filesTotal: files, start: time.Now(), stop: make(chan struct{})}
	s.startProgress(p)
	return p
}

// newProgressSince is newProgress for a transfer that started at start.
func (s *session) newProgressSince(name string, total int64, start time.Time) *progress {
	p := &progress{out: s.stderr, name: name, total: total, start: start, stop: make(chan struct{})}
	s.startProgress(p)
	return p
}

// startProgress starts drawing p, if progress bars are on.
func (s *session) startProgress(p *progress) {
	if !s.progress {
		return
	}
	p.wg.Go(func() {
		if time.Since(p.start) >= progressDelay {
			p.draw(false)
		}
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if time.Since(p.start) >= progressDelay {
					p.draw(false)
				}
			}
		}
	})
}

// line renders the bar.
func (p *progress) line(now time.Time) string {
	done := p.done.Load()
	secs := max(now.Sub(p.start).Seconds(), 1e-9)
	rate := float64(done) / secs / (1 << 20)
	name := p.name
	if p.tree {
		name = fmt.Sprintf("%s  %d/%d files", p.name, p.files.Load(), p.filesTotal)
	}
	if p.total <= 0 {
		return fmt.Sprintf("%s  %s  %.1f MiB/s", name, mib(done), rate)
	}
	frac := min(float64(done)/float64(p.total), 1)
	const width = 30
	fill := int(frac * width)
	return fmt.Sprintf("%s [%s%s] %3.0f%%  %s / %s  %.1f MiB/s", name, strings.Repeat("=", fill),
		strings.Repeat(" ", width-fill), frac*100, mib(done), mib(p.total), rate)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (p *progress) draw(final bool) {
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.out, "\r%s\x1b[K%s", p.line(time.Now()), end)
	p.drawn = true
}

// finish stops the bar, drawing its last state if it was shown.
func (p *progress) finish() {
	close(p.stop)
	p.wg.Wait()
	if p.drawn {
		p.draw(true)
	}
}

type countingWriter struct {
	w io.Writer
	p *progress
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.done.Add(int64(n))
	return n, err
}

type countingReader struct {
	r io.Reader
	p *progress
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.done.Add(int64(n))
	return n, err
}

func (p *progress) writer(w io.Writer) io.Writer { return countingWriter{w, p} }
func (p *progress) reader(r io.Reader) io.Reader { return countingReader{r, p} }
