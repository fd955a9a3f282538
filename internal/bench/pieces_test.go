package bench

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestInPieces: a range larger than the piece size is cut into pieces that
// are all in flight at once (as the kernel issues an O_DIRECT read's), the
// bytes done add up, and a piece's error is returned; one piece runs alone.
func TestInPieces(t *testing.T) {
	t.Run("all at once", func(t *testing.T) {
		const n, size = 1<<20 + 100, 256 << 10 // five pieces, the last of 100 bytes
		var mu sync.Mutex
		var got [][2]int
		arrived := make(chan struct{}, 5)
		release := make(chan struct{})
		go func() {
			for range 5 {
				select {
				case <-arrived:
				case <-time.After(time.Minute):
					t.Error("the pieces were not all in flight at once")
				}
			}
			close(release)
		}()
		total, err := inPieces(n, size, func(lo, hi int) (int, error) {
			mu.Lock()
			got = append(got, [2]int{lo, hi})
			mu.Unlock()
			arrived <- struct{}{}
			<-release // every piece waits for all five to have started
			return hi - lo, nil
		})
		if err != nil || total != n {
			t.Fatalf("inPieces: %d bytes, %v; want %d, nil", total, err, n)
		}
		seen := map[[2]int]bool{}
		for _, r := range got {
			seen[r] = true
		}
		for i := range 5 {
			if r := [2]int{i * size, min(n, (i+1)*size)}; !seen[r] {
				t.Errorf("piece %v not run (ran %v)", r, got)
			}
		}
	})
	t.Run("error", func(t *testing.T) {
		bad := errors.New("short")
		total, err := inPieces(4<<10, 1<<10, func(lo, hi int) (int, error) {
			if lo == 2<<10 {
				return 10, bad
			}
			return hi - lo, nil
		})
		if !errors.Is(err, bad) || total != 3<<10+10 {
			t.Fatalf("inPieces: %d bytes, %v; want %d, %v", total, err, 3<<10+10, bad)
		}
	})
	t.Run("one piece", func(t *testing.T) {
		calls := 0
		total, err := inPieces(1<<10, 4<<10, func(lo, hi int) (int, error) {
			calls++ // no goroutine: no race
			return hi - lo, nil
		})
		if err != nil || total != 1<<10 || calls != 1 {
			t.Fatalf("inPieces: %d bytes, %v, %d calls; want 1024, nil, 1", total, err, calls)
		}
	})
}
