package main

import (
	"context"
	"io"
)

// ctxReader reads r, and returns context.Cause(ctx) once ctx ends even
// while a Read of r is blocked (stdin, a pipe that never closes): that
// Read goes on in its goroutine, left to the process's exit, and what
// it reads is dropped.
type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	buf     []byte
	left    []byte          // read and not yet returned
	leftErr error           // the error of the Read that read left
	pending chan readResult // the Read in flight, nil if none
}

type readResult struct {
	n   int
	err error
}

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader { return &ctxReader{ctx: ctx, r: r} }

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.left) > 0 {
		n := copy(p, c.left)
		c.left = c.left[n:]
		if len(c.left) > 0 {
			return n, nil
		}
		err := c.leftErr
		c.leftErr = nil
		return n, err
	}
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	if c.pending == nil {
		if len(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		ch := make(chan readResult, 1)
		buf := c.buf[:len(p)]
		go func() {
			n, err := c.r.Read(buf)
			ch <- readResult{n, err}
		}()
		c.pending = ch
	}
	select {
	case res := <-c.pending:
		c.pending = nil
		n := copy(p, c.buf[:res.n])
		if c.left = c.buf[n:res.n]; len(c.left) > 0 {
			c.leftErr = res.err
			return n, nil
		}
		return n, res.err
	case <-c.ctx.Done():
		return 0, context.Cause(c.ctx)
	}
}
