package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// benchResult is one measured phase.
type benchResult struct {
	name  string
	bytes int64
	ops   int64
	dur   time.Duration
}

func (r benchResult) String() string {
	secs := r.dur.Seconds()
	if r.ops > 0 {
		return fmt.Sprintf("%s: %d ops in %.2f s: %.0f IOPS, %.1f MiB/s", r.name, r.ops, secs,
			float64(r.ops)/secs, float64(r.bytes)/secs/(1<<20))
	}
	return fmt.Sprintf("%s: %.1f MiB in %.2f s: %.1f MiB/s", r.name, float64(r.bytes)/(1<<20), secs, float64(r.bytes)/secs/(1<<20))
}

// benchOptions are the bench command's flags.
type benchOptions struct {
	size, block     int64
	blockS, name    string
	jobs            int
	dur             time.Duration
	keep, skipWrite bool
}

// maxBenchJobs bounds -jobs: each job holds a buffer of -block bytes.
const maxBenchJobs = 1024

// define defines the bench command's flags on fset; the function it
// returns, called once fset has parsed them, checks their ranges.
func (o *benchOptions) define(fset *flag.FlagSet) func() error {
	sizeS := fset.String("size", "32MiB", "file size (at least -block)")
	fset.StringVar(&o.name, "file", ".rdma-nfs-bench", "file to create, write and read in the export: it must not exist (with -no-write: it must)")
	fset.StringVar(&o.blockS, "block", "4KiB", fmt.Sprintf("random read size (1..-size, at most %d: one READ)", client.MaxIOSize(0)))
	fset.IntVar(&o.jobs, "jobs", 16, fmt.Sprintf("random READs in flight (1..%d)", maxBenchJobs))
	fset.DurationVar(&o.dur, "duration", 5*time.Second, "random read duration (positive)")
	fset.BoolVar(&o.keep, "keep", false, "keep the file bench created")
	fset.BoolVar(&o.skipWrite, "no-write", false, "read an existing file instead, which is left as it is")
	return func() error {
		var err error
		if o.size, err = parseSize(*sizeS); err != nil {
			return cmdline.Usagef("-size: %w", err)
		}
		// A random read is one READ: at most the largest rsize.
		if o.block, err = parseSize(o.blockS); err != nil || o.block <= 0 || o.block > o.size || o.block > int64(client.MaxIOSize(0)) {
			return cmdline.Usagef("-block %q: want 1 to -size bytes, at most %d", o.blockS, client.MaxIOSize(0))
		}
		if o.dur <= 0 {
			return cmdline.Usagef("-duration %v: out of range (0, +inf)", o.dur)
		}
		return cmdline.Int("-jobs", int64(o.jobs), 1, maxBenchJobs, "")
	}
}

// bench writes a file sequentially (write-behind, COMMIT at close), reads
// it back sequentially (read-ahead), then reads random blocks with many
// READs in flight. It creates the file (an exclusive, GUARDED CREATE: a
// file of that name is never overwritten) and removes it at the end
// unless -keep; with -no-write it reads an existing file and leaves it.
func (s *session) bench(ctx context.Context, o benchOptions) (err error) {
	block := o.block
	file := remotePath(o.name)
	var results []benchResult

	if !o.skipWrite {
		f, err := s.exp.OpenFile(ctx, file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("bench: %s exists: bench writes only a file it creates (remove it, name another with -file, or read it with -no-write)", o.name)
		}
		if err != nil {
			return err
		}
		if !o.keep {
			defer func() {
				// Removed even when ctx ended (an interrupt), within a
				// bound of its own.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if rerr := s.exp.Remove(rctx, file); err == nil {
					err = rerr
				}
			}()
		}
		buf := make([]byte, copyBuf)
		for i := range buf {
			buf[i] = byte(i*7 + i>>8)
		}
		start := time.Now()
		for done := int64(0); done < o.size; {
			n := min(int64(len(buf)), o.size-done)
			if _, err := f.Write(buf[:n]); err != nil {
				f.Close()
				return err
			}
			done += n
		}
		if err := f.Close(); err != nil {
			return err
		}
		results = append(results, benchResult{name: "seq-write", bytes: o.size, dur: time.Since(start)})
	}

	f, err := s.exp.Open(ctx, file)
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := io.CopyBuffer(io.Discard, f, make([]byte, copyBuf))
	f.Close()
	if err != nil {
		return err
	}
	results = append(results, benchResult{name: "seq-read", bytes: n, dur: time.Since(start)})
	blocks := n / block // the file read, which -no-write did not write
	if blocks == 0 {
		return fmt.Errorf("bench: %s has %d bytes, less than -block %s", o.name, n, o.blockS)
	}

	fh := f.Handle()
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	rctx, cancel := context.WithTimeout(ctx, o.dur)
	defer cancel()
	var wg sync.WaitGroup
	start = time.Now()
	for range o.jobs {
		wg.Go(func() {
			buf := make([]byte, block)
			for rctx.Err() == nil {
				off := rand.Int64N(blocks) * block
				if _, _, err := s.exp.Client.Read(rctx, fh, uint64(off), buf); err != nil {
					if rctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	results = append(results, benchResult{name: fmt.Sprintf("rand-read-%s-x%d", o.blockS, o.jobs), bytes: ops.Load() * block,
		ops: ops.Load(), dur: time.Since(start)})
	for _, r := range results {
		fmt.Fprintln(s.stdout, r)
	}
	return nil
}
