package nfs_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServerConcurrentReads: READs of many sizes at once, from several
// goroutines over one connection, each checked against the file. The
// server builds READ replies in pooled buffers and gives each back once
// the reply is written; a buffer given back before its reply left, or a
// transport that kept a reply's memory after WriteMsg returned, shows
// here as another READ's data.
func TestServerConcurrentReads(t *testing.T) {
	env := startClientEnv(t, nil)
	const size = 1 << 20
	data := pattern(size, 7)
	require.NoError(t, os.WriteFile(env.path("f"), data, 0o644))
	ctx := callCtx(t)
	fh, _, err := env.exp.Lookup(ctx, "f", true)
	require.NoError(t, err)
	c := env.exp.Client
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			buf := make([]byte, 256<<10)
			for range 120 {
				n := 1 + rng.IntN(len(buf))
				if rng.IntN(2) == 0 {
					n = 1 + rng.IntN(8<<10) // small: inline replies
				}
				off := rng.IntN(size)
				got, _, err := c.Read(ctx, fh, uint64(off), buf[:n])
				if err != nil {
					errs <- err
					return
				}
				want := data[off:min(off+n, size)]
				if got != len(want) || !bytes.Equal(buf[:got], want) {
					errs <- fmt.Errorf("READ of %d bytes at %d: %d bytes, not the file's", n, off, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
