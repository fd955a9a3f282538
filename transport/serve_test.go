package transport

import (
	"slices"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// callResults answers one call of a test server: h is the call's header,
// args its arguments, and out the reply so far (MSG_ACCEPTED, SUCCESS).
// It returns out with the results appended and true, or false to leave the
// call unanswered, or an error to end the server loop.
type callResults func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error)

// serveCalls is the RPC server loop of the transport tests: it reads each
// call on c, answers it as results says and sends the reply, until
// ReadMsg, WriteMsg, the parse of a call header or results fails, and
// returns that error. buf and out are the call and reply buffers it
// reuses (nil: grown as needed; with room enough, the loop allocates
// nothing).
func serveCalls(c *Conn, buf, out []byte, results callResults) error {
	h := new(xdr.CallHeader) // one for the loop: results may keep it from the stack
	for {
		var err error
		if buf, err = c.ReadMsg(buf); err != nil {
			return err
		}
		*h = xdr.CallHeader{}
		args, err := h.Unmarshal(buf)
		if err != nil {
			return err
		}
		var answer bool
		out, answer, err = results(h, buf[args:], appendReply(out[:0], h.XID))
		if err != nil {
			return err
		}
		if !answer {
			continue
		}
		if err := c.WriteMsg(out); err != nil {
			return err
		}
	}
}

// echoArgs answers every call with its arguments, unparsed, as results.
func echoArgs(_ *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
	return append(out, args...), true, nil
}

// echoOpaque answers procEcho (and procs) with the opaque of its arguments
// as results; every other procedure gets no results.
func echoOpaque(procs ...uint32) callResults {
	return func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
		if h.Proc != procEcho && !slices.Contains(procs, h.Proc) {
			return out, true, nil
		}
		r := xdr.NewReader(args)
		p, err := r.Opaque(testMaxReply)
		if err != nil {
			return nil, false, err
		}
		return xdr.AppendOpaque(out, p), true, nil
	}
}
