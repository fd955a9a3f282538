package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
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

// bench writes a file sequentially (write-behind, COMMIT at close), reads
// it back sequentially (read-ahead), then reads random blocks with many
// READs in flight.
func (s *session) bench(ctx context.Context, args []string) error {
	fset := flag.NewFlagSet("bench", flag.ContinueOnError)
	fset.SetOutput(s.stderr)
	sizeS := fset.String("size", "32MiB", "file size")
	name := fset.String("file", ".rdma-nfs-bench", "file to write and read in the export")
	blockS := fset.String("block", "4KiB", "random read size")
	jobs := fset.Int("jobs", 16, "random READs in flight")
	dur := fset.Duration("duration", 5*time.Second, "random read duration")
	keep := fset.Bool("keep", false, "keep the file")
	skipWrite := fset.Bool("no-write", false, "reuse the existing file")
	if err := fset.Parse(args); err != nil {
		return err
	}
	size, err := parseSize(*sizeS)
	if err != nil {
		return err
	}
	block, err := parseSize(*blockS)
	if err != nil || block <= 0 || block > size {
		return fmt.Errorf("-block %q: want 1..size bytes", *blockS)
	}
	file := remotePath(*name)
	var results []benchResult

	if !*skipWrite {
		f, err := s.exp.Create(ctx, file)
		if err != nil {
			return err
		}
		buf := make([]byte, copyBuf)
		for i := range buf {
			buf[i] = byte(i*7 + i>>8)
		}
		start := time.Now()
		for done := int64(0); done < size; {
			n := min(int64(len(buf)), size-done)
			if _, err := f.Write(buf[:n]); err != nil {
				f.Close()
				return err
			}
			done += n
		}
		if err := f.Close(); err != nil {
			return err
		}
		results = append(results, benchResult{name: "seq-write", bytes: size, dur: time.Since(start)})
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

	fh := f.Handle()
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	rctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	blocks := size / block
	var wg sync.WaitGroup
	start = time.Now()
	for range *jobs {
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
	results = append(results, benchResult{name: fmt.Sprintf("rand-read-%s-x%d", *blockS, *jobs), bytes: ops.Load() * block,
		ops: ops.Load(), dur: time.Since(start)})
	for _, r := range results {
		fmt.Fprintln(s.stdout, r)
	}
	if !*keep {
		return s.exp.Remove(ctx, file)
	}
	return nil
}
